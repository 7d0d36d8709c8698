"""books-graphql: the book catalog as GraphQL (Tartiflette on Sanic)."""
