"""One OpenAPI document for the platform, merged from the services' own (CONTRACT §9).

Each REST service publishes its document at ``/docs/openapi.json`` (sanic-ext). The gateway
keeps the paths it routes to that service, adds its own public paths, the bearer scheme and
the error schema, and serves the result at ``/openapi.json`` with a browsable UI at ``/docs``.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from typing import Any

import aiohttp

from gateway.routing import ORDERS, USERS, Access, resolve
from gateway.upstreams import Upstream

logger = logging.getLogger("gateway.docs")

API_VERSION = "1.0.0"  # tracks CONTRACT.md; a breaking change would come under /v2
CACHE_S = 30.0
FETCH_TIMEOUT = aiohttp.ClientTimeout(total=3.0)
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "example": "VALIDATION_FAILED"},
                "message": {"type": "string"},
                "fields": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        }
    },
}


def _error_response(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _gateway_paths() -> dict[str, Any]:
    """The gateway's own public paths, and /graphql (GraphQL documents itself)."""
    plain = {"200": {"description": "OK"}}
    graphql_body = {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["query"],
                    "properties": {
                        "query": {"type": "string"},
                        "variables": {"type": "object", "nullable": True},
                        "operationName": {"type": "string", "nullable": True},
                    },
                }
            }
        },
    }
    return {
        "/health": {
            "get": {"summary": "The gateway is alive", "responses": plain, "tags": ["operations"]}
        },
        "/ready": {
            "get": {
                "summary": "Every upstream is ready",
                "responses": {"200": {"description": "ready"}, "503": {"description": "not ready"}},
                "tags": ["operations"],
            }
        },
        "/graphql": {
            "post": {
                "summary": "The book catalog (GraphQL over HTTP)",
                "tags": ["books"],
                "requestBody": graphql_body,
                "responses": {"200": {"description": "A GraphQL response"}},
            },
            "get": {
                "summary": "A GraphQL query in the query string (queries only)",
                "tags": ["books"],
                "parameters": [
                    {"name": "query", "in": "query", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {"200": {"description": "A GraphQL response"}},
            },
        },
    }


def merge(documents: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Merge upstream documents: keep only paths the route table sends to that upstream."""
    merged: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {
            "title": "API platform",
            "version": API_VERSION,
            "description": "Users, orders and the book catalog, through one gateway.",
        },
        "paths": _gateway_paths(),
        "components": {
            "schemas": {"Error": ERROR_SCHEMA},
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
        merged["components"]["schemas"].update(schemas)
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
            responses.setdefault("401", _error_response("Missing or invalid bearer token"))
        for status, description in (
            ("413", "Request body too large"),
            ("429", "Rate limited"),
            ("502", "An upstream answered with something unusable"),
            ("503", "An upstream is unavailable"),
            ("504", "An upstream did not answer in time"),
        ):
            responses.setdefault(status, _error_response(description))
    return operations


class DocsCache:
    """Fetches and merges the upstream documents at most every ``CACHE_S`` seconds."""

    def __init__(self, upstreams: dict[str, Upstream]) -> None:
        self.upstreams = {name: upstreams[name] for name in (USERS, ORDERS) if name in upstreams}
        self._document: dict[str, Any] | None = None
        self._fetched_at = float("-inf")
        self._lock = asyncio.Lock()

    async def get(self, session: aiohttp.ClientSession) -> dict[str, Any]:
        async with self._lock:
            if self._document is None or time.monotonic() - self._fetched_at > CACHE_S:
                documents = {}
                for name, upstream in self.upstreams.items():
                    document = await _fetch(session, upstream)
                    if document is not None:
                        documents[name] = document
                self._document = merge(documents)
                # A partial document (an upstream down) is retried on the next request.
                if len(documents) == len(self.upstreams):
                    self._fetched_at = time.monotonic()
            return self._document


async def _fetch(session: aiohttp.ClientSession, upstream: Upstream) -> dict[str, Any] | None:
    for target in upstream.candidates():
        try:
            async with session.get(
                f"{target.url}/docs/openapi.json", timeout=FETCH_TIMEOUT
            ) as response:
                if response.status == 200:
                    document: dict[str, Any] = await response.json()
                    return document
        except (aiohttp.ClientError, TimeoutError, ValueError) as error:
            logger.warning(
                "could not fetch API docs", extra={"upstream": upstream.name, "error": repr(error)}
            )
    return None


SWAGGER_UI = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>API platform — API docs</title>
  <link rel="stylesheet" href="https://unpkg.com/swagger-ui-dist@5/swagger-ui.css">
</head>
<body>
  <div id="docs"></div>
  <script src="https://unpkg.com/swagger-ui-dist@5/swagger-ui-bundle.js" crossorigin></script>
  <script>
    window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#docs" });
  </script>
</body>
</html>
"""
