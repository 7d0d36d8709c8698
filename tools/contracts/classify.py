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


def _unversioned(text: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(text)
    document.get("info", {}).pop("version", None)
    return document


def _json_difference(kind: str, baseline: str, current: str) -> Difference:
    before, after = _unversioned(baseline), _unversioned(current)
    if before == after:
        return Difference()
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
    return Difference(breaking=breaking, additive=result["nonBreaking"])


def _graphql_difference(baseline: str, current: str) -> Difference:
    from graphql import build_schema, find_breaking_changes, find_dangerous_changes, print_schema

    before, after = build_schema(baseline), build_schema(current)
    if print_schema(before) == print_schema(after):
        return Difference()
    breaking = [f"{c.type.name}: {c.description}" for c in find_breaking_changes(before, after)]
    dangerous = [f"{c.type.name}: {c.description}" for c in find_dangerous_changes(before, after)]
    # graphql-core names breaking and dangerous changes; any other change is an addition.
    return Difference(breaking=breaking, additive=dangerous or ["the schema gained definitions"])


def difference(name: str, baseline: str, current: str) -> Difference:
    """Classify the change of snapshot ``name`` (openapi.json, asyncapi.json, schema.graphql)."""
    if name.endswith(".graphql"):
        return _graphql_difference(baseline, current)
    return _json_difference(name.removesuffix(".json"), baseline, current)
