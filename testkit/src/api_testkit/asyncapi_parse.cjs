// Parse an AsyncAPI document with @asyncapi/parser; print its diagnostics as JSON.
// Usage: node asyncapi_parse.cjs <document.json>
const fs = require("fs");
const { Parser } = require("@asyncapi/parser");

const SEVERITIES = ["error", "warning", "information", "hint"];

async function main() {
  const text = fs.readFileSync(process.argv[2], "utf8");
  const { document, diagnostics } = await new Parser().parse(text);
  const report = diagnostics.map((d) => ({
    severity: SEVERITIES[d.severity] ?? String(d.severity),
    code: String(d.code),
    message: d.message,
    path: d.path.join("."),
  }));
  process.stdout.write(JSON.stringify({ parsed: document !== undefined, diagnostics: report }));
}

main().catch((error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error));
  process.exit(1);
});
