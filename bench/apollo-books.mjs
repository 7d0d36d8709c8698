// The Apollo Server 5 getting-started books service, serving the same catalog as
// books-graphql (BOOKS_FILE, its seed-file format), for bench/graphql.py. Run with
// NODE_ENV=production. APOLLO_RESPONSE_CACHE=1 adds @apollo/server-plugin-response-cache
// and a 60 s cache hint on Query.books (Apollo caches nothing without a hint).
import { readFileSync } from 'node:fs';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';

const cached = process.env.APOLLO_RESPONSE_CACHE === '1';
const typeDefs = `#graphql
  type Book { id: ID! title: String! author: String! }
  type Query { books: [Book!]! book(id: ID!): Book }
`;
const books = JSON.parse(readFileSync(process.env.BOOKS_FILE, 'utf8')).books;
const resolvers = {
  Query: {
    books: cached
      ? (_, __, ___, info) => {
          info.cacheControl.setCacheHint({ maxAge: 60 });
          return books;
        }
      : () => books,
    book: (_, { id }) => books.find((book) => book.id === id) ?? null,
  },
};
const plugins = [];
if (cached) {
  const { default: responseCachePlugin } = await import('@apollo/server-plugin-response-cache');
  plugins.push(responseCachePlugin());
}
const server = new ApolloServer({ typeDefs, resolvers, plugins });
const { url } = await startStandaloneServer(server, {
  listen: { host: '127.0.0.1', port: Number(process.env.PORT) },
});
console.log(`Apollo Server ready at ${url}`);
