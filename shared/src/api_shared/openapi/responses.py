"""What an operation answers, said the same way by every service: success responses with
their headers (``response``), the error responses the contract gives it (``error_responses``,
or ``error_response_object`` for a document put together by hand) and its bearer token
(``bearer_auth``, with the 401 that goes with it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel
from sanic_ext.extensions.openapi.builders import SpecificationBuilder
from sanic_ext.extensions.openapi.definitions import MediaType, Reference, Response

from api_shared.media import JSON
from api_shared.openapi.dialect import COMPONENTS, component_name
from api_shared.openapi.headers import REQUEST_ID, RETRY_AFTER, WWW_AUTHENTICATE
from api_shared.openapi.shapes import Error
from api_shared.openapi.store import operation_of, schema_ref

F = TypeVar("F", bound=Callable[..., Any])

BEARER_AUTH = "bearerAuth"


class _Response(Response):
    """sanic-ext's Response keeps only the fields it declares: this one declares headers."""

    headers: dict[str, Any]


# What each status means in the contract (docs/api.md#errors), for the error responses'
# descriptions.
ERROR_DESCRIPTIONS: Mapping[int, str] = {
    400: "MALFORMED_JSON, VALIDATION_FAILED, BAD_SORT or BAD_FILTER",
    401: "UNAUTHENTICATED: no valid bearer token (or INVALID_CREDENTIALS on login)",
    403: "FORBIDDEN: the caller may not do this",
    404: "NOT_FOUND: no such resource (a malformed id included)",
    405: "METHOD_NOT_ALLOWED: the route exists, the method does not (see Allow)",
    406: "NOT_ACCEPTABLE: the Accept header excludes application/json",
    409: "A conflict with the resource's current state",
    412: "PRECONDITION_FAILED: If-Match does not match the current ETag",
    413: "PAYLOAD_TOO_LARGE: the body is above the limit",
    415: "UNSUPPORTED_MEDIA_TYPE: the body is not JSON",
    422: "The request is well formed but names something that cannot be used",
    429: "RATE_LIMITED (see Retry-After)",
    502: "BAD_GATEWAY: an upstream answered with something unusable",
    503: "UNAVAILABLE: a dependency is down (see Retry-After)",
    504: "UPSTREAM_TIMEOUT: an upstream did not answer in time",
}
BODY_ERRORS = (400, 413, 415)  # any operation that reads a body
ALWAYS = (406,)  # any operation: content negotiation


def _content(model: type[BaseModel] | None, media_types: Iterable[str]) -> dict[str, Any] | None:
    if model is None:
        return None
    # Success bodies carry every field; an error's ``fields`` is there only when it says something.
    reference = schema_ref(model, response=model is not Error)
    # sanic-ext's MediaType.all is unannotated: it returns the dict it builds.
    return MediaType.all(dict.fromkeys(media_types, reference))  # type: ignore[no-any-return]


def response(
    status: int,
    model: type[BaseModel] | None,
    description: str,
    *,
    headers: Mapping[str, Any] | None = None,
) -> Callable[[F], F]:
    """Document a success response: its JSON body (``None``: no body) and headers."""

    def document(func: F) -> F:
        operation_of(func).responses[str(status)] = _Response(
            _content(model, [JSON]),
            description=description,
            headers={**REQUEST_ID, **(headers or {})},
        )
        return func

    return document


def response_content(
    status: int,
    content: Mapping[str, Reference | Mapping[str, Any]],
    description: str,
    *,
    headers: Mapping[str, Any] | None = None,
) -> Callable[[F], F]:
    """Document a response given per media type (a schema or a reference for each).

    For answers that are not the contract's JSON alone (GraphQL's media types, a page).
    """

    def document(func: F) -> F:
        operation_of(func).responses[str(status)] = _Response(
            MediaType.all(dict(content)),
            description=description,
            headers={**REQUEST_ID, **(headers or {})},
        )
        return func

    return document


def error_responses(*statuses: int, body: bool = False) -> Callable[[F], F]:
    """Document the contract's error responses (``Error`` body) of an operation.

    ``body``: the operation reads a JSON body, so it may also answer 400, 413 and 415.
    Every operation may answer 406.
    """
    every = sorted({*statuses, *ALWAYS, *(BODY_ERRORS if body else ())})

    def document(func: F) -> F:
        operation = operation_of(func)
        for status in every:
            operation.responses.setdefault(str(status), _error_response(status))
        return func

    return document


def _error_response(status: int, headers: Mapping[str, Any] | None = None) -> _Response:
    return _Response(
        _content(Error, [JSON]),
        description=_error_description(status),
        headers=_error_headers(status, headers),
    )


def _error_headers(status: int, headers: Mapping[str, Any] | None) -> dict[str, Any]:
    # RateLimitedError and UnavailableError always say when to come back, whoever raises them.
    always = RETRY_AFTER if status in (429, 503) else {}
    return {**REQUEST_ID, **always, **(headers or {})}


def error_response_object(status: int, headers: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The contract's error response for ``status`` as a plain OpenAPI object, for a document
    put together by hand (the gateway's merged one): what ``error_responses`` tells sanic-ext.

    The ``Error`` schema must be among the document's components (``component_schemas``).
    """
    return {
        "description": _error_description(status),
        "content": {JSON: {"schema": {"$ref": COMPONENTS.format(model=component_name(Error))}}},
        "headers": _error_headers(status, headers),
    }


def _error_description(status: int) -> str:
    return ERROR_DESCRIPTIONS.get(status, "An error in the contract's shape")


def bearer_auth(*, optional: bool = False) -> Callable[[F], F]:
    """The operation takes a bearer token (``optional``: it also serves callers without one)."""
    spec = SpecificationBuilder()
    if not spec.has_component("securitySchemes", BEARER_AUTH):
        spec.add_security_scheme(BEARER_AUTH, "http", bearer_format="JWT", scheme="bearer")

    def document(func: F) -> F:
        operation = operation_of(func)
        if optional:
            operation.security.append({})
        operation.secured(BEARER_AUTH)
        # A token that is sent must be valid, even where none is required.
        operation.responses["401"] = _error_response(401, WWW_AUTHENTICATE)
        return func

    return document
