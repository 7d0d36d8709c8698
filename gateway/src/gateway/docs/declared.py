"""What the gateway itself declares in the merged OpenAPI document: its tags, its servers, its
own paths and schemas, the bearer scheme, the answers it may give on any proxied operation,
and every response header, each described once (components/headers)."""

from __future__ import annotations

from typing import Any

from api_shared.deprecation import OPENAPI_HEADERS as DEPRECATION_HEADERS
from api_shared.openapi.dialect import COMPONENTS, component_schemas
from api_shared.openapi.headers import ETAG, LOCATION, REQUEST_ID, RETRY_AFTER, WWW_AUTHENTICATE
from api_shared.openapi.responses import BEARER_AUTH, error_response_object
from api_shared.openapi.shapes import Error
from gateway.cors import EXPOSED_HEADERS

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


def gateway_paths() -> dict[str, Any]:
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
