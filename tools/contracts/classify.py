"""The difference between a baseline snapshot and the current one, classified by real tools.

- OpenAPI: openapi-diff; AsyncAPI: @asyncapi/diff (both npm, run by ``diff.mjs``, pinned in
  this folder's package-lock.json and installed by ``npm ci``).
- GraphQL: graphql-core's ``find_breaking_changes`` and ``find_dangerous_changes``.

The documents' own version (``info.version``, the SDL's header) is left out: a release that
changes no contract needs no more than a patch.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


@dataclass
class Difference:
    breaking: list[str] = field(default_factory=list)
    additive: list[str] = field(default_factory=list)  # compatible, yet a new contract

    @property
    def empty(self) -> bool:
        return not self.breaking and not self.additive


def install_tools() -> None:
    """``npm ci`` the pinned diff tools once (again when the lock file changed)."""
    lock = HERE / "package-lock.json"
    installed = HERE / "node_modules/.package-lock.json"
    if installed.exists() and installed.stat().st_mtime >= lock.stat().st_mtime:
        return
    subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
        cwd=HERE,
        check=True,
    )


def _refs(value: Any) -> set[str]:
    """The component schemas ``value`` refers to, directly."""
    if isinstance(value, dict):
        found = {value["$ref"].rpartition("/")[2]} if isinstance(value.get("$ref"), str) else set()
        return found.union(*(_refs(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(_refs(item) for item in value))
    return set()


def _open_responses(document: dict[str, Any]) -> None:
    """Let response bodies have more fields, as docs/api.md#versioning promises clients.

    Response schemas say ``additionalProperties: false`` (every field, no other one), so a
    set-based differ would call a new response field a broader, breaking response; clients
    must ignore unknown response fields, which makes it an addition.
    """
    schemas = document.get("components", {}).get("schemas", {})
    responses = [
        op.get("responses", {})
        for path in document.get("paths", {}).values()
        for op in path.values()
        if isinstance(op, dict)
    ]
    seen: set[str] = set()
    todo = _refs(responses)
    while todo:
        name = todo.pop()
        if name in seen or name not in schemas:
            continue
        seen.add(name)
        todo |= _refs(schemas[name])
    for name in seen:
        if schemas[name].get("additionalProperties") is False:
            del schemas[name]["additionalProperties"]


# Strings whose format or pattern already fixes their length: a ``maxLength`` at or above it
# refuses nothing that was accepted, though a set-based differ calls it a narrower input.
UUID_LENGTH = 36
FIXED_LENGTH_PATTERNS = {
    "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$": 20,  # a timestamp to the second
}


def _implied_length(schema: dict[str, Any]) -> int | None:
    """The longest string ``schema`` accepts without its ``maxLength``, if its format or
    pattern fixes it."""
    if schema.get("format") == "uuid":
        return UUID_LENGTH
    pattern = schema.get("pattern")
    return FIXED_LENGTH_PATTERNS.get(pattern) if isinstance(pattern, str) else None


def _drop_implied_bounds(value: Any) -> None:
    """Remove every ``maxLength`` that only restates what the format or pattern implies."""
    if isinstance(value, dict):
        implied = _implied_length(value)
        bound = value.get("maxLength")
        if implied is not None and isinstance(bound, int) and bound >= implied:
            del value["maxLength"]
        for item in value.values():
            _drop_implied_bounds(item)
    elif isinstance(value, list):
        for item in value:
            _drop_implied_bounds(item)


def _comparable(kind: str, text: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(text)
    if "version" in document.get("info", {}):
        document["info"]["version"] = "0.0.0"  # the same on both sides; the tools require one
    if kind == "openapi":
        _open_responses(document)
        _drop_implied_bounds(document)
    return document


def _json_difference(kind: str, baseline: str, current: str) -> Difference:
    if _versionless(baseline) == _versionless(current):
        return Difference()
    before, after = _comparable(kind, baseline), _comparable(kind, current)
    with tempfile.TemporaryDirectory() as folder:
        paths = [Path(folder, "baseline.json"), Path(folder, "current.json")]
        for path, document in zip(paths, (before, after), strict=True):
            path.write_text(json.dumps(document), encoding="utf-8")
        run = subprocess.run(
            ["node", str(HERE / "diff.mjs"), kind, *map(str, paths)],
            capture_output=True,
            text=True,
            check=False,
        )
    if run.returncode != 0:
        raise RuntimeError(f"the {kind} diff tool failed:\n{run.stderr[-3000:]}")
    result = json.loads(run.stdout)
    # What the tool cannot classify is not known to be compatible: it counts as breaking.
    breaking = result["breaking"] + [f"unclassified: {item}" for item in result["unclassified"]]
    additive = result["nonBreaking"]
    if not breaking and not additive:
        # A change the tool sees no consequence of (a new optional request field where
        # unknown ones were refused, a description): still a new contract to publish.
        additive = ["the document changed (no compatibility consequence found)"]
    return Difference(breaking=breaking, additive=additive)


def _versionless(text: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(text)
    document.get("info", {}).pop("version", None)
    return document


def _graphql_difference(baseline: str, current: str) -> Difference:
    from graphql import build_schema, find_breaking_changes, find_dangerous_changes, print_schema

    before, after = build_schema(baseline), build_schema(current)
    if print_schema(before) == print_schema(after):
        return Difference()
    breaking = [f"{c.type.name}: {c.description}" for c in find_breaking_changes(before, after)]
    dangerous = [f"{c.type.name}: {c.description}" for c in find_dangerous_changes(before, after)]
    # graphql-core names breaking and dangerous changes; any other change is an addition.
    if not breaking and not dangerous:
        dangerous = ["the schema changed compatibly (added definitions or descriptions)"]
    return Difference(breaking=breaking, additive=dangerous)


def difference(name: str, baseline: str, current: str) -> Difference:
    """Classify the change of snapshot ``name`` (openapi.json, asyncapi.json, schema.graphql)."""
    if name.endswith(".graphql"):
        return _graphql_difference(baseline, current)
    return _json_difference(name.removesuffix(".json"), baseline, current)
