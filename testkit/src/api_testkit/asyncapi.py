"""A third party's reading of an AsyncAPI document: @asyncapi/parser (npm), under node.

The parser validates the document against the AsyncAPI schema, resolves its references and
runs its own rule set (``asyncapi_parse.cjs`` beside this module prints the diagnostics).
The npm package is installed once into the git-ignored cache ``.cache/asyncapi-parser``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .node import npm_install, run_node
from .paths import CACHE

ASYNCAPI_PARSER = "@asyncapi/parser@3.6.3"
PARSE_SCRIPT = Path(__file__).with_name("asyncapi_parse.cjs")


@dataclass(frozen=True, slots=True)
class ParserReport:
    """Whether the parser built a document, and what it said (errors, warnings and the rest)."""

    parsed: bool
    diagnostics: list[dict[str, str]]

    @property
    def errors(self) -> list[dict[str, str]]:
        return [d for d in self.diagnostics if d["severity"] == "error"]


async def parse_asyncapi(document: Mapping[str, Any]) -> ParserReport:
    """What @asyncapi/parser makes of ``document``."""
    node_modules = await npm_install(CACHE / "asyncapi-parser", [ASYNCAPI_PARSER])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "asyncapi.json"
        path.write_bytes(orjson.dumps(document))
        report = orjson.loads(await run_node(PARSE_SCRIPT, node_modules, str(path)))
    return ParserReport(parsed=bool(report["parsed"]), diagnostics=report["diagnostics"])


def message_schema(document: Mapping[str, Any], event_type: str) -> dict[str, Any]:
    """The payload schema of ``event_type``'s message, standing alone: its references
    (``#/components/schemas/...``) resolve within it, so any draft-07 validator takes it."""
    messages = document["components"]["messages"].values()
    named = [message for message in messages if message["name"] == event_type]
    assert len(named) == 1, f"{len(named)} messages are named {event_type}, not one"
    return {"components": document["components"], **named[0]["payload"]}
