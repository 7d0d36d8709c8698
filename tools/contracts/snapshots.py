"""Each service's published contracts, generated in-process from its app (no server runs).

    python tools/contracts/snapshots.py <service>   # one service's documents, JSON on stdout

- REST services: the OpenAPI document sanic-ext serves at ``/docs/openapi.json``, built by
  the same builder its ``before_server_start`` listener runs.
- users-service and orders-service: the AsyncAPI document of the events they publish, as
  their ``/docs/asyncapi.json`` serves it (webhooks-service publishes no event: it delivers).
- the gateway: the merged ``/openapi.json`` its clients read (gateway.docs.openapi.merge) of the
  services' documents, since what the gateway exposes, guards and adds only shows there.
- books-graphql: its GraphQL schema (SDL) as graphql-core prints it, sorted, with a header
  naming the service's version.

Each service is built in a process of its own: sanic-ext's builder and Tortoise are
per-process singletons. The text is deterministic: sorted keys, two-space indent.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# Service → (its app module, whether it publishes events).
REST = {
    "users-service": ("users_service.app", True),
    "orders-service": ("orders_service.app", True),
    "webhooks-service": ("webhooks_service.app", False),
    "books-graphql": ("books_graphql.app", False),  # its transport, merged by the gateway
}
# The gateway's upstream names (gateway.routing) of each service it merges.
UPSTREAMS = {
    "users-service": "users",
    "orders-service": "orders",
    "books-graphql": "books",
    "webhooks-service": "webhooks",
}
SERVICES = ("gateway", "users-service", "orders-service", "books-graphql", "webhooks-service")
SDL_FILE = ROOT / "books-graphql/src/books_graphql/schema.graphql"


def dump(document: Any) -> str:
    """A document's snapshot text: sorted keys, stable formatting, one final newline."""
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def app_documents(service: str) -> dict[str, Any]:
    """``service``'s OpenAPI (and AsyncAPI) documents, from its app; in this process."""
    from sanic_ext.extensions.openapi.builders import SpecificationBuilder

    module, publishes = REST[service]
    app = importlib.import_module(module).create_app()
    app.router.finalize()
    for listener in app.blueprints["openapi"]._future_listeners:
        listener.listener(app)  # build_spec: what the server does before it starts
    documents = {"openapi": SpecificationBuilder().build(app).serialize()}
    if publishes:
        handler = app.router.name_index[f"{app.name}.asyncapi"].handler
        documents["asyncapi"] = json.loads(asyncio.run(handler(None)).body)
    # Through JSON: the builder's objects become plain values, as the server sends them.
    return json.loads(json.dumps(documents, default=str))


def _in_own_process(service: str) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, __file__, service], capture_output=True, text=True, check=False
    )
    if run.returncode != 0:
        raise RuntimeError(f"generating {service}'s contracts failed:\n{run.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(run.stdout)
    return result


def books_sdl() -> str:
    from graphql import build_schema, lexicographic_sort_schema, print_schema

    from api_shared.version import service_version

    schema = lexicographic_sort_schema(build_schema(SDL_FILE.read_text(encoding="utf-8")))
    header = (
        f"# books-graphql {service_version('books-graphql')}: the GraphQL schema it serves.\n"
        "# Written by `make contracts-update`; `make contracts` compares it with the release.\n"
    )
    return header + "\n" + print_schema(schema) + "\n"


def generate_all() -> dict[str, dict[str, str]]:
    """Every service's snapshot files (relative to the service folder) and their text."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        built = dict(zip(REST, pool.map(_in_own_process, REST), strict=True))
    from gateway.docs.openapi import merge

    merged = merge({UPSTREAMS[name]: documents["openapi"] for name, documents in built.items()})
    files: dict[str, dict[str, str]] = {"gateway": {"contracts/openapi.json": dump(merged)}}
    for name in ("users-service", "orders-service", "webhooks-service"):
        files[name] = {
            f"contracts/{kind}.json": dump(document) for kind, document in built[name].items()
        }
    files["books-graphql"] = {"contracts/schema.graphql": books_sdl()}
    return files


if __name__ == "__main__":
    sys.stdout.write(json.dumps(app_documents(sys.argv[1])))
