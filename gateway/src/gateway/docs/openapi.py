"""One OpenAPI document for the platform, merged from the services' own (docs/api.md#operations).

Each service publishes its document at ``/docs/openapi.json`` (sanic-ext; books-graphql's
describes GraphQL over HTTP at ``/graphql``). The gateway keeps the paths it routes to that
service, adds its own public paths, the bearer scheme and the error schema
(``gateway.docs.declared``), and serves the result at ``/openapi.json`` (the browsable page at
``/docs`` is ``gateway.swagger``'s).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from typing import Any

from api_shared.deprecation import OPENAPI_HEADERS as DEPRECATION_HEADERS
from api_shared.http import HttpSession
from api_shared.openapi.headers import REQUEST_ID
from api_shared.openapi.responses import BEARER_AUTH
from api_shared.version import service_version
from gateway.docs.cache import DocsCache
from gateway.docs.declared import (
    ANONYMOUS_OR_BEARER,
    BEARER_DESCRIPTION,
    CORS_HEADERS,
    DECLARED_HEADERS,
    GATEWAY_RESPONSES,
    GATEWAY_SCHEMAS,
    HEADERS,
    RATE_LIMIT_HEADERS,
    SERVERS,
    TAGS,
    UNAUTHENTICATED,
    gateway_paths,
)
from gateway.routing import Access, resolve
from gateway.upstream.replicas import Upstream

# The merged document is the platform's public API as the gateway serves it, so its version
# is the gateway's (docs/releasing.md): what the gateway exposes, guards and adds to each
# operation is the gateway's contract, snapshotted in gateway/contracts/openapi.json.
API_VERSION = service_version("gateway")
OPENAPI_PATH = "/docs/openapi.json"  # each service's own document (sanic-ext)
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")


def merge(documents: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Merge upstream documents: keep only paths the route table sends to that upstream."""
    merged: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {
            "title": "API platform",
            "version": API_VERSION,
            "description": "Users, orders, the book catalog and webhooks, through one gateway.",
        },
        "servers": copy.deepcopy(SERVERS),
        "security": copy.deepcopy(ANONYMOUS_OR_BEARER),
        "tags": copy.deepcopy(TAGS),
        "paths": gateway_paths(),
        "components": {
            "schemas": copy.deepcopy(GATEWAY_SCHEMAS),
            "headers": {},
            "securitySchemes": {
                BEARER_AUTH: {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "JWT",
                    "description": BEARER_DESCRIPTION,
                }
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
                _with_cors(operation)
                if operation.get("deprecated"):
                    _with_headers(operation, DEPRECATION_HEADERS)
                if operation.get("security") == ANONYMOUS_OR_BEARER:
                    del operation["security"]  # the document's own, said once
    _declare_headers(merged)
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
            responses.setdefault("401", copy.deepcopy(UNAUTHENTICATED))
        for status, response in GATEWAY_RESPONSES.items():
            responses.setdefault(status, copy.deepcopy(response))
        _with_headers(operation, RATE_LIMIT_HEADERS)
    return operations


def _with_request_id(operation: dict[str, Any]) -> None:
    """Every response, of the gateway or a service, carries X-Request-ID
    (docs/api.md#representation)."""
    _with_headers(operation, REQUEST_ID)


def _with_cors(operation: dict[str, Any]) -> None:
    """Every response may carry the CORS grant (gateway.cors), its own answers' included."""
    _with_headers(operation, CORS_HEADERS)


def _with_headers(operation: dict[str, Any], headers: Mapping[str, Any]) -> None:
    for response in operation.get("responses", {}).values():
        declared = response.setdefault("headers", {})
        for name, header in headers.items():
            declared.setdefault(name, copy.deepcopy(header))


def _declare_headers(document: dict[str, Any]) -> None:
    """Move every response header into components/headers, referenced where it was.

    ``DECLARED_HEADERS`` says what a header named there is; another one is declared as the
    first operation to use it wrote it.
    """
    components: dict[str, Any] = document["components"]["headers"]
    for operations in document["paths"].values():
        for method, operation in operations.items():
            if method not in HTTP_METHODS or not isinstance(operation, dict):
                continue
            for response in operation.get("responses", {}).values():
                headers = response.get("headers", {})
                for name, header in headers.items():
                    if "$ref" not in header:
                        components.setdefault(
                            name, copy.deepcopy(DECLARED_HEADERS.get(name, header))
                        )
                        headers[name] = {"$ref": HEADERS.format(name=name)}
    document["components"]["headers"] = dict(sorted(components.items()))


def openapi_docs(
    http: HttpSession,
    upstreams: Mapping[str, Upstream],
    *,
    clock: Callable[[], float] = time.monotonic,
) -> DocsCache:
    """The merged OpenAPI document of every service behind the gateway."""
    return DocsCache(http, upstreams, OPENAPI_PATH, merge, clock=clock)
