// Reads a GraphQL endpoint's schema the way graphql-js clients do, with each of the given
// options of getIntrospectionQuery alone, none, and all together; prints one JSON report:
// {"<option set>": {"errors": [...]} | {"sdl": "...", "description": ..., "directives": [...]}}
// Usage: NODE_PATH=<node_modules> node introspect.cjs URL OPTION,OPTION,... [HEADER=VALUE ...]
// (api_testkit.graphql_clients names the options.)
"use strict";
const graphql = require("graphql");

async function introspect(url, headers, options) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...headers },
    body: JSON.stringify({ query: graphql.getIntrospectionQuery(options) }),
  });
  const body = await response.json();
  if (body.errors) return { status: response.status, errors: body.errors };
  const schema = graphql.buildClientSchema(body.data); // throws on an unusable answer
  return {
    status: response.status,
    sdl: graphql.printSchema(schema),
    description: schema.description ?? null,
    directives: schema.getDirectives().map((directive) => directive.name),
  };
}

async function main() {
  const [url, options, ...pairs] = process.argv.slice(2);
  const OPTIONS = options.split(",");
  const headers = Object.fromEntries(pairs.map((pair) => pair.split(/=(.*)/s).slice(0, 2)));
  // Each option alone is the default query (descriptions on) plus that option.
  const sets = { none: { descriptions: false } };
  for (const option of OPTIONS) sets[option] = { [option]: true };
  sets.all = Object.fromEntries(OPTIONS.map((option) => [option, true]));
  const report = { graphqlVersion: graphql.version };
  for (const [name, options] of Object.entries(sets)) {
    try {
      report[name] = await introspect(url, headers, options);
    } catch (error) {
      report[name] = { errors: [{ message: String(error && error.stack || error) }] };
    }
  }
  process.stdout.write(JSON.stringify(report));
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack || error));
  process.exit(1);
});
