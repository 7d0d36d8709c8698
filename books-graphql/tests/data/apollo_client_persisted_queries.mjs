// Apollo Client 3 with its persisted-queries link, against the URL given: two clients (each
// with an empty cache) run the same query; every HTTP exchange is recorded. Prints JSON.
//   node apollo_client_persisted_queries.mjs URL post|get QUERY
import { createHash } from 'node:crypto';
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client/core/index.js';
import { createPersistedQueryLink } from '@apollo/client/link/persisted-queries/index.js';

const [url, mode, queryText] = process.argv.slice(2);
const exchanges = [];
const recordingFetch = async (uri, options) => {
  const response = await fetch(uri, options);
  const body = await response.clone().text();
  exchanges.push({
    method: options.method, url: String(uri), requestBody: options.body ?? null,
    status: response.status, responseBody: body,
  });
  return response;
};
const sha256 = (text) => createHash('sha256').update(text).digest('hex');
const QUERY = gql(queryText);

async function run() {
  const link = createPersistedQueryLink({ sha256, useGETForHashedQueries: mode === 'get' })
    .concat(new HttpLink({ uri: url, fetch: recordingFetch }));
  const client = new ApolloClient({ link, cache: new InMemoryCache() });
  const result = await client.query({ query: QUERY, fetchPolicy: 'network-only' });
  return result.data;
}

const first = await run();
const exchangesOfFirst = exchanges.length;
const second = await run();
console.log(JSON.stringify({ first, second, exchangesOfFirst, exchanges }));
