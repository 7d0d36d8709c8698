// The Apollo Server 5 getting-started books service, serving the same catalog as
// books-graphql (its seed file), for bench/graphql.py. Run with NODE_ENV=production.
import { readFileSync } from 'node:fs';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';

const typeDefs = `#graphql
  type Book { id: ID! title: String! author: String! }
  type Query { books: [Book!]! book(id: ID!): Book }
`;
const books = JSON.parse(readFileSync(process.env.BOOKS_FILE, 'utf8')).books;
const resolvers = {
  Query: {
    books: () => books,
    book: (_, { id }) => books.find((book) => book.id === id) ?? null,
  },
};
const server = new ApolloServer({ typeDefs, resolvers });
const { url } = await startStandaloneServer(server, {
  listen: { host: '127.0.0.1', port: Number(process.env.PORT) },
});
console.log(`Apollo Server ready at ${url}`);
