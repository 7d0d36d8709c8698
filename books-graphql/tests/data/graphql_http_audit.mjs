// graphql-http's server audits (the GraphQL-over-HTTP specification's MUST, SHOULD and MAY
// rules) against the URL given. Prints JSON: every audit's name, status and reason.
//   node graphql_http_audit.mjs URL
import { serverAudits } from 'graphql-http';

const url = process.argv[2];
const results = await Promise.all(
  serverAudits({ url, fetchFn: fetch }).map(async (audit) => ({ name: audit.name, ...(await audit.fn()) })),
);
console.log(JSON.stringify(results.map(({ name, status, reason }) => ({ name, status, reason }))));
