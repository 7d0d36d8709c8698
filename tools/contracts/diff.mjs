// One contract's difference, classified by a maintained diff tool, as one JSON line:
//   node diff.mjs openapi|asyncapi <baseline.json> <current.json>
//   → {"breaking": [...], "nonBreaking": [...], "unclassified": [...]}, each item one line of text.
// openapi-diff (Atlassian) for OpenAPI: it compares the schemas as JSON Schema sets, so a removed
// response field, a newly required input or a narrowed type is breaking. @asyncapi/diff (the
// AsyncAPI Initiative's) for AsyncAPI 3: its v3 standard classifies each change of the document.
import { readFileSync } from "node:fs";
import openapiDiff from "openapi-diff";
import { diff as asyncapiDiff } from "@asyncapi/diff";

const [kind, baselinePath, currentPath] = process.argv.slice(2);
const read = (path) => readFileSync(path, "utf8");

function openapiItem(d) {
  const where = (d.destinationSpecEntityDetails[0] || d.sourceSpecEntityDetails[0] || {}).location;
  return `${d.code} at ${where || "(document)"}`;
}

async function compareOpenapi() {
  const outcome = await openapiDiff.diffSpecs({
    sourceSpec: { content: read(baselinePath), location: baselinePath, format: "openapi3" },
    destinationSpec: { content: read(currentPath), location: currentPath, format: "openapi3" },
  });
  return {
    breaking: (outcome.breakingDifferences || []).map(openapiItem),
    nonBreaking: (outcome.nonBreakingDifferences || []).map(openapiItem),
    unclassified: (outcome.unclassifiedDifferences || []).map(openapiItem),
  };
}

// @asyncapi/diff's v3 standard stops at the messages: the payloads' component schemas are
// classified here as events are read (docs/api.md#versioning): a consumer ignores a field it
// does not know, so a new field or schema is an addition; anything removed or changed in a
// payload's schema is breaking, and what no rule names stays unclassified (breaking too).
const ADDITION = { add: "non-breaking", remove: "breaking", edit: "breaking" };
const PROSE = { add: "non-breaking", remove: "non-breaking", edit: "non-breaking" };
const EVENT_SCHEMAS = {
  "/components/schemas": ADDITION,
  "/components/schemas/*": ADDITION,
  "/components/schemas/*/properties": ADDITION,
  "/components/schemas/*/properties/*": ADDITION,
  // A field newly required in an event is a promise more (an addition); one no longer
  // required, or the list reordered, is not known to be harmless.
  "/components/schemas/*/required": ADDITION,
  "/components/schemas/*/required/*": ADDITION,
  "/components/schemas/*/description": PROSE,
  "/components/schemas/*/properties/*/description": PROSE,
  // A message of the components: a new one is an addition. What its summary or description
  // says of it is documentation, not its shape (the standard names no path below
  // /components, so each step of the way is named here).
  "/components/messages": ADDITION,
  "/components/messages/*": ADDITION,
  "/components/messages/*/summary": PROSE,
  "/components/messages/*/description": PROSE,
};

function compareAsyncapi() {
  const output = asyncapiDiff(JSON.parse(read(baselinePath)), JSON.parse(read(currentPath)), {
    outputType: "json",
    override: EVENT_SCHEMAS,
  });
  const items = (changes) => changes.map((c) => `${c.action} ${c.path}`);
  return {
    breaking: items(output.breaking()),
    nonBreaking: items(output.nonBreaking()),
    unclassified: items(output.unclassified()),
  };
}

const result = kind === "openapi" ? await compareOpenapi() : compareAsyncapi();
process.stdout.write(JSON.stringify(result) + "\n");
