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
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from api_shared.deprecation import OPENAPI_HEADERS as DEPRECATION_HEADERS
from api_shared.errors import UnavailableError
from api_shared.http import HttpSession
from api_shared.openapi.dialect import COMPONENTS, component_schemas
from api_shared.openapi.operations import (
    BEARER_AUTH,
    ETAG,
    LOCATION,
    REQUEST_ID,
    RETRY_AFTER,
    WWW_AUTHENTICATE,
    error_response_object,
)
from api_shared.openapi.shapes import Error
from api_shared.version import service_version
from gateway.cors import EXPOSED_HEADERS
from gateway.routing import Access, resolve
from gateway.upstream.replicas import Upstream

logger = logging.getLogger(__name__)

# The merged document is the platform's public API as the gateway serves it, so its version
# is the gateway's (docs/releasing.md): what the gateway exposes, guards and adds to each
# operation is the gateway's contract, snapshotted in gateway/contracts/openapi.json.
API_VERSION = service_version("gateway")
OPENAPI_PATH = "/docs/openapi.json"  # each service's own document (sanic-ext)
CACHE_S = 30.0  # a complete merged document is fetched again after this long
RETRY_FIRST_S = 1.0  # after a failed merge; doubling after each failure, up to:
RETRY_MAX_S = 30.0
MAX_DOUBLINGS = 32
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
        "name": "accounts",
        "description": (
            "Email verification and password resets: the mailed links "
            "(docs/api.md#email-verification-and-password-reset)"
        ),
    },
    {"name": "api-keys", "description": "Long-lived keys for scripts (docs/api.md#api-keys)"},
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
        "description": (
            "Webhook endpoints and their deliveries: each user's own, every one for admins "
            "(docs/api.md#webhooks)"
        ),
    },
    {
        "name": "events",
        "description": (
            "The caller's event history: the events about their own orders and account, "
            "every event for admins (docs/api.md#event-log)"
        ),
    },
    {"name": "operations", "description": "Liveness and version of the gateway"},
]

# The gateway's own schemas; the services' components are added beside them.
GATEWAY_SCHEMAS: dict[str, Any] = {
    **component_schemas(Error),
    "Health": {
        "type": "object",
        "required": ["status"],
        "properties": {"status": {"type": "string", "enum": ["ok"]}},
    },
    "Version": {
        "type": "object",
        "required": ["service", "version"],
        "properties": {
            "service": {"type": "string", "enum": ["gateway"]},
            "version": {"type": "string", "description": "Semantic version (docs/releasing.md)"},
        },
    },
}


# What the gateway itself may answer on any proxied operation, besides the service's answers.
GATEWAY_RESPONSES: dict[str, dict[str, Any]] = {
    "413": error_response_object(413),
    "429": error_response_object(429, RETRY_AFTER),
    "502": error_response_object(502),
    "503": error_response_object(503, RETRY_AFTER),
    "504": error_response_object(504),
}
UNAUTHENTICATED = error_response_object(401, WWW_AUTHENTICATE)  # where a token is required

HEADERS = "#/components/headers/{name}"
# What the gateway adds to the answers it forwards: the tightest rate-limit budget the request
# drew from (api_shared.ratelimit writes them; IETF draft httpapi-ratelimit-headers). Not
# required: its own refusals before the budget was known (no route, a missing token) and
# answers it made up for an upstream that failed carry none (docs/api.md#limits).
RATE_LIMIT_HEADERS: dict[str, dict[str, Any]] = {
    "RateLimit": {
        "description": "What is left of the budget after this request: its policy's name, "
        "`r` requests remaining, `t` seconds until it is full again.",
        "required": False,
        "schema": {
            "type": "string",
            "maxLength": 128,
            "pattern": '^"[a-z0-9-]+";r=[0-9]+;t=[0-9]+$',
        },
    },
    "RateLimit-Policy": {
        "description": "The budget's policy: its name, `q` requests at once, refilled over "
        "`w` seconds.",
        "required": False,
        "schema": {
            "type": "string",
            "maxLength": 128,
            "pattern": '^"[a-z0-9-]+";q=[0-9]+;w=[0-9]+$',
        },
    },
}
# What the gateway adds to every answer where CORS is configured (gateway.cors; CORS_ORIGINS).
CORS_HEADERS: dict[str, dict[str, Any]] = {
    "Access-Control-Allow-Origin": {
        "description": "The request's Origin, when it is one of CORS_ORIGINS; absent otherwise.",
        "required": False,
        "schema": {"type": "string", "maxLength": 2048, "pattern": "^[a-z][a-z0-9+.-]*://"},
    },
    "Access-Control-Expose-Headers": {
        "description": "With Access-Control-Allow-Origin: the headers a script may read.",
        "required": False,
        "schema": {"type": "string", "enum": [EXPOSED_HEADERS]},
    },
    "Vary": {
        "description": "`Origin` where CORS is configured (an answer differs by origin), after "
        "what the service put there (GraphQL's `Accept`).",
        "required": False,
        "schema": {"type": "string", "maxLength": 256, "pattern": "^[A-Za-z*]"},
    },
}
# Every response header of the document, declared once (components/headers) and referenced
# from each response. A header a service declares that is not named here is taken as the
# service wrote it, from the first operation declaring it.
DECLARED_HEADERS: dict[str, Any] = {
    **REQUEST_ID,
    **WWW_AUTHENTICATE,
    **LOCATION,
    **RETRY_AFTER,
    **ETAG,
    **RATE_LIMIT_HEADERS,
    **CORS_HEADERS,
    **DEPRECATION_HEADERS,
}
# An operation that says nothing takes anonymous callers and bearer credentials alike; one
# that needs a credential says so (OpenAPI's empty requirement: anonymous access).
ANONYMOUS_OR_BEARER: list[dict[str, list[str]]] = [{}, {BEARER_AUTH: []}]
BEARER_DESCRIPTION = (
    "An access token from `POST /api/auth/token`, or an API key (`ak_live_…`, "
    "docs/api.md#api-keys). Access tokens are JWTs (RFC 7519) verified as RFC8725 advises: "
    "only EdDSA (Ed25519) is accepted, whatever the header says; only keys published at "
    "`/.well-known/jwks.json`, found by `kid`; `exp`, `iss`, `aud` and `sub` are required and "
    "checked; they last 15 minutes (docs/api.md#authentication)."
)
SERVERS = [
    {
        "url": "/",
        "description": "This deployment, whichever it is (local, staging or production): the "
        "gateway that serves this document; every path is relative to it.",
        "x-internal": False,
    }
]


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
                        "content": {
                            "application/json": {
                                "schema": {"$ref": COMPONENTS.format(model="Health")}
                            }
                        },
                    }
                },
            }
        },
        "/version": {
            "get": {
                "operationId": "getVersion",
                "summary": "The gateway's version (that of this document)",
                "tags": ["operations"],
                "responses": {
                    "200": {
                        "description": "The gateway and its version",
                        "content": {
                            "application/json": {
                                "schema": {"$ref": COMPONENTS.format(model="Version")}
                            }
                        },
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
        "servers": copy.deepcopy(SERVERS),
        "security": copy.deepcopy(ANONYMOUS_OR_BEARER),
        "tags": copy.deepcopy(TAGS),
        "paths": _gateway_paths(),
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


Merge = Callable[[dict[str, dict[str, Any]]], dict[str, Any]]
"""Upstream name → its document, into the one document the gateway serves."""


@dataclass(frozen=True, slots=True)
class MergedDocument:
    """A merged document as served: its JSON bytes, encoded once, and whether every
    upstream's part is in it."""

    body: bytes
    complete: bool


class DocsCache:
    """The merged document of the upstreams' documents at ``path``, kept as bytes, fetched
    over the gateway's own HTTP session.

    1. The first call fetches every upstream (concurrently) and merges; it, and any call
       arriving meanwhile, waits for that one merge. Every other call is answered at once
       from the bytes kept, and at most one refresh runs at a time, in the background.
    2. A complete document (every upstream answered) is fetched again by the first call
       ``ttl_s`` or more after it was merged, to follow the services' deployments.
    3. A failed refresh (an upstream down or answering nonsense, or the merge failing)
       changes nothing served: the last complete document stays. The next attempt waits
       ``retry_first_s``, doubling after each failure up to ``retry_max_s``, however many
       calls arrive meanwhile, so a down upstream is not asked again on every call.
    4. Until a first complete merge, what the upstreams that answered describe is served,
       marked incomplete (docs/api.md#operations); a merge that fails before anything was
       ever merged leaves nothing to serve: ``UnavailableError``, with Retry-After.
    """

    def __init__(
        self,
        http: HttpSession,
        upstreams: Mapping[str, Upstream],
        path: str,
        merge: Merge,
        *,
        ttl_s: float = CACHE_S,
        retry_first_s: float = RETRY_FIRST_S,
        retry_max_s: float = RETRY_MAX_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.http = http
        self.upstreams, self.path, self.merge = dict(upstreams), path, merge
        self.ttl_s, self.retry_first_s, self.retry_max_s = ttl_s, retry_first_s, retry_max_s
        self._clock = clock
        self._served: MergedDocument | None = None
        self._next_refresh = float("-inf")
        self._failures = 0
        self._refreshing: asyncio.Task[None] | None = None

    async def get(self) -> MergedDocument:
        """The document to serve now; starts a refresh when one is due."""
        if self._clock() >= self._next_refresh and not self.refreshing:
            self._refreshing = asyncio.create_task(
                self._refresh(), name=f"docs-refresh {self.path}"
            )
        if self._served is None and self._refreshing is not None:
            # Shielded: a caller that goes away does not cancel the merge others wait for.
            await asyncio.shield(self._refreshing)
        if self._served is None:
            raise UnavailableError(
                "The API documents could not be merged yet; try again shortly.",
                retry_after_s=max(1, math.ceil(self._next_refresh - self._clock())),
            )
        return self._served

    @property
    def refreshing(self) -> bool:
        return self._refreshing is not None and not self._refreshing.done()

    async def _refresh(self) -> None:
        """Fetch and merge once; never raises (it runs as a task nobody may await)."""
        try:
            session = self.http.session
            names = list(self.upstreams)
            fetched = await asyncio.gather(
                *(_fetch(session, self.upstreams[name], self.path) for name in names)
            )
            documents = {
                name: document
                for name, document in zip(names, fetched, strict=True)
                if document is not None
            }
            body = orjson.dumps(self.merge(documents))
        except Exception:
            logger.exception("could not merge the API documents", extra={"path": self.path})
            self._failed("the merge failed")
            return
        complete = len(documents) == len(self.upstreams)
        if complete or self._served is None or not self._served.complete:
            self._served = MergedDocument(body, complete)
        if complete:
            self._failures = 0
            self._next_refresh = self._clock() + self.ttl_s
        else:
            missing = ", ".join(sorted(set(self.upstreams) - set(documents)))
            self._failed(f"no document from {missing}")

    def _failed(self, reason: str) -> None:
        self._failures += 1
        # The exponent is capped: after a long outage 2**n would no longer fit a float.
        doublings = min(self._failures - 1, MAX_DOUBLINGS)
        delay = min(self.retry_first_s * 2**doublings, self.retry_max_s)
        self._next_refresh = self._clock() + delay
        logger.warning(
            "API documents not merged; what was served is kept",
            extra={
                "path": self.path,
                "reason": reason,
                "complete": self._served is not None and self._served.complete,
                "failures": self._failures,
                "retry_in_s": delay,
            },
        )


def openapi_docs(
    http: HttpSession,
    upstreams: Mapping[str, Upstream],
    *,
    clock: Callable[[], float] = time.monotonic,
) -> DocsCache:
    """The merged OpenAPI document of every service behind the gateway."""
    return DocsCache(http, upstreams, OPENAPI_PATH, merge, clock=clock)


async def _fetch(
    session: aiohttp.ClientSession, upstream: Upstream, path: str
) -> dict[str, Any] | None:
    for target in upstream.candidates():
        try:
            async with session.get(f"{target.url}{path}", timeout=FETCH_TIMEOUT) as response:
                if response.status == 200:
                    document = await response.json()
                    if isinstance(document, dict):
                        return document
        except (aiohttp.ClientError, TimeoutError, ValueError) as error:
            logger.warning(
                "could not fetch API docs",
                extra={"upstream": upstream.name, "path": path, "error": repr(error)},
            )
    return None
