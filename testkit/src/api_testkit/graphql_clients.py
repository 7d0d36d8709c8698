"""Today's GraphQL clients against books-graphql, directly or through the gateway.

graphql-js (npm, under node) reads the schema with every ``getIntrospectionQuery`` option
alone, none, and all together (``introspect.cjs``, beside this module). The npm package is
installed once into a git-ignored cache (``BOOKS_TEST_CACHE_DIR``, default
``<repo>/.cache/books-graphql-clients``).
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from .node import npm_install, run_node
from .paths import CACHE, REPO

GRAPHQL_JS = "graphql@17.1.0"
INTROSPECT_SCRIPT = Path(__file__).with_name("introspect.cjs")
INTROSPECTION_OPTIONS = (
    "descriptions",
    "specifiedByUrl",
    "directiveIsRepeatable",
    "schemaDescription",
    "inputValueDeprecation",
    "experimentalDirectiveDeprecation",
    "oneOf",
)
"""The options of graphql-js's ``getIntrospectionQuery``; the report has one entry for each,
one for ``none`` (descriptions off) and one for ``all``."""
NORMAL_QUERY = "{ books { id title author } }"


def _cache_dir() -> Path:
    return Path(os.environ.get("BOOKS_TEST_CACHE_DIR", CACHE / "books-graphql-clients"))


async def graphql_js_introspection(url: str, *headers: str) -> dict[str, Any]:
    """What graphql-js makes of ``url``'s schema, option set by option set.

    ``headers`` are ``NAME=VALUE`` pairs sent with every request.
    """
    node_modules = await npm_install(_cache_dir(), [GRAPHQL_JS])
    options = ",".join(INTROSPECTION_OPTIONS)
    report: dict[str, Any] = orjson.loads(
        await run_node(INTROSPECT_SCRIPT, node_modules, url, options, *headers)
    )
    return report


@cache
def graphiql_introspection() -> str:
    """The introspection query GraphiQL sends when it opens (the heaviest a browser asks)."""
    return (REPO / "books-graphql/tests/data/graphiql_introspection.graphql").read_text()
