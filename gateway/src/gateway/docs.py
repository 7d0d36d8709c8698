"""One OpenAPI document for the platform, merged from the services' own (docs/api.md#operations).

Each service publishes its document at ``/docs/openapi.json`` (sanic-ext; books-graphql's
describes GraphQL over HTTP at ``/graphql``). The gateway keeps the paths it routes to that
service, adds its own public paths, the bearer scheme and
the error schema, and serves the result at ``/openapi.json`` (the browsable page at
``/docs`` is ``gateway.swagger``'s).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp

from api_shared.openapi.dialect import component_schemas
from api_shared.openapi.operations import REQUEST_ID_HEADER
from api_shared.openapi.shapes import Error
from gateway.routing import BOOKS, ORDERS, USERS, WEBHOOKS, Access, resolve
from gateway.upstreams import Upstream

logger = logging.getLogger(__name__)

API_VERSION = "1.0.0"  # tracks docs/api.md; a breaking change would come under /v2
OPENAPI_PATH = "/docs/openapi.json"  # each service's own document (sanic-ext)
CACHE_S = 30.0
FETCH_TIMEOUT = aiohttp.ClientTimeout(total=3.0)
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")

TAGS = [
    {
        "name": "users",
        "description": "Users: sign-up, reading, changing, deleting (docs/api.md#users)",
    },
    {
        "name": "auth",
        "description": "Tokens and the keys that verify them (docs/api.md#authentication)",
    },
    {
        "name": "orders",
        "description": "Orders, their states, idempotent creation (docs/api.md#orders)",
    },
    {
        "name": "books",
        "description": "The book catalog, in GraphQL (docs/api.md#books-graphql)",
    },
    {
        "name": "webhooks",
        "description": "Webhook endpoints and their deliveries, for admins (docs/api.md#webhooks)",
    },
    {"name": "operations", "description": "Liveness of the gateway"},
]

# The gateway's own schemas; the services' components are added beside them.
GATEWAY_SCHEMAS: dict[str, Any] = {
    **component_schemas(Error),
    "Health": {
        "type": "object",
        "required": ["status"],
        "properties": {"status": {"type": "string", "enum": ["ok"]}},
    },
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _error_response(description: str, headers: dict[str, Any] | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": description,
        "content": {"application/json": {"schema": _ref("Error")}},
    }
    if headers:
        response["headers"] = headers
    return response


def _retry_after(description: str) -> dict[str, Any]:
    return {
        "Retry-After": {
            "description": description,
            "required": True,
            "schema": {"type": "string", "pattern": "^[0-9]+$"},
        }
    }


# What the gateway itself may answer on any proxied operation, besides the service's answers.
GATEWAY_RESPONSES: dict[str, dict[str, Any]] = {
    "413": _error_response("PAYLOAD_TOO_LARGE: the body is above the limit"),
    "429": _error_response("RATE_LIMITED", _retry_after("Seconds until a request is allowed")),
    "502": _error_response("BAD_GATEWAY: an upstream answered with something unusable"),
    "503": _error_response(
        "UNAVAILABLE: an upstream is unavailable", _retry_after("Seconds to wait before retrying")
    ),
    "504": _error_response("UPSTREAM_TIMEOUT: an upstream did not answer in time"),
}


def _gateway_paths() -> dict[str, Any]:
    """The gateway's own public paths."""
    return {
        "/health": {
            "get": {
                "operationId": "getHealth",
                "summary": "The gateway is alive",
                "tags": ["operations"],
                "responses": {
                    "200": {
                        "description": "Alive",
                        "content": {"application/json": {"schema": _ref("Health")}},
                    }
                },
            }
        },
    }


def merge(documents: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Merge upstream documents: keep only paths the route table sends to that upstream."""
    merged: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {
            "title": "API platform",
            "version": API_VERSION,
            "description": "Users, orders, the book catalog and webhooks, through one gateway.",
        },
        "tags": copy.deepcopy(TAGS),
        "paths": _gateway_paths(),
        "components": {
            "schemas": copy.deepcopy(GATEWAY_SCHEMAS),
            "securitySchemes": {
                "bearerAuth": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
            },
        },
    }
    for upstream, document in documents.items():
        for path, operations in document.get("paths", {}).items():
            route = resolve(path)
            if route is None or route.upstream != upstream:
                continue  # the service's operational routes, or routes not exposed publicly
            merged["paths"][path] = _with_gateway_contract(path, copy.deepcopy(operations))
        schemas = document.get("components", {}).get("schemas", {})
        for name, schema in schemas.items():
            merged["components"]["schemas"].setdefault(name, schema)
    for operations in merged["paths"].values():
        for method, operation in operations.items():
            if method in HTTP_METHODS and isinstance(operation, dict):
                _with_request_id(operation)
    return merged


def _with_gateway_contract(path: str, operations: dict[str, Any]) -> dict[str, Any]:
    """Add what the gateway itself may answer on every operation: 401, 413, 429, 5xx."""
    route = resolve(path)
    for method, operation in operations.items():
        if method not in HTTP_METHODS or not isinstance(operation, dict):
            continue
        responses = operation.setdefault("responses", {})
        if route is not None and route.access_for(method.upper()) is Access.AUTHENTICATED:
            operation.setdefault("security", [{"bearerAuth": []}])
            responses.setdefault(
                "401",
                _error_response(
                    "UNAUTHENTICATED: no valid bearer token",
                    {"WWW-Authenticate": {"required": True, "schema": {"type": "string"}}},
                ),
            )
        for status, response in GATEWAY_RESPONSES.items():
            responses.setdefault(status, copy.deepcopy(response))
    return operations


def _with_request_id(operation: dict[str, Any]) -> None:
    """Every response, of the gateway or a service, carries X-Request-ID
    (docs/api.md#representation)."""
    for response in operation.get("responses", {}).values():
        response.setdefault("headers", {}).setdefault("X-Request-ID", dict(REQUEST_ID_HEADER))


Merge = Callable[[dict[str, dict[str, Any]]], dict[str, Any]]
"""Upstream name → its document, into the one document the gateway serves."""


class DocsCache:
    """Fetches the upstreams' documents at ``path`` and merges them, at most every
    ``CACHE_S`` seconds: the OpenAPI documents here (``openapi_docs``), the AsyncAPI ones
    in ``gateway.events_docs``."""

    def __init__(self, upstreams: Mapping[str, Upstream], path: str, merge: Merge) -> None:
        self.upstreams, self.path, self.merge = dict(upstreams), path, merge
        self._document: dict[str, Any] | None = None
        self._fetched_at = float("-inf")
        self._lock = asyncio.Lock()

    async def get(self, session: aiohttp.ClientSession) -> dict[str, Any]:
        async with self._lock:
            if self._document is None or time.monotonic() - self._fetched_at > CACHE_S:
                documents = {}
                for name, upstream in self.upstreams.items():
                    document = await _fetch(session, upstream, self.path)
                    if document is not None:
                        documents[name] = document
                self._document = self.merge(documents)
                # A partial document (an upstream down) is retried on the next request.
                if len(documents) == len(self.upstreams):
                    self._fetched_at = time.monotonic()
            return self._document


def openapi_docs(upstreams: Mapping[str, Upstream]) -> DocsCache:
    """The merged OpenAPI document of every service behind the gateway."""
    documented = {
        name: upstreams[name] for name in (USERS, ORDERS, BOOKS, WEBHOOKS) if name in upstreams
    }
    return DocsCache(documented, OPENAPI_PATH, merge)


async def _fetch(
    session: aiohttp.ClientSession, upstream: Upstream, path: str
) -> dict[str, Any] | None:
    for target in upstream.candidates():
        try:
            async with session.get(f"{target.url}{path}", timeout=FETCH_TIMEOUT) as response:
                if response.status == 200:
                    document: dict[str, Any] = await response.json()
                    return document
        except (aiohttp.ClientError, TimeoutError, ValueError) as error:
            logger.warning(
                "could not fetch API docs",
                extra={"upstream": upstream.name, "path": path, "error": repr(error)},
            )
    return None
