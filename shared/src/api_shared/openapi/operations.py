"""sanic-ext operation documents, said the same way by every service.

The services describe their operations with sanic-ext (``from sanic_ext import openapi``);
these decorators and parameters add what every service documents alike: responses with
their headers (``response``), the error responses the contract gives an operation
(``error_responses``), its bearer token (``bearer_auth``), bodies, path ids, paging, and
parameters sanic-ext cannot say (required headers, JSON text in the query string).
Nothing here knows about users or orders: the services say which statuses apply.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel
from sanic_ext import openapi
from sanic_ext.extensions.openapi.builders import OperationStore, SpecificationBuilder
from sanic_ext.extensions.openapi.definitions import (
    MediaType,
    Parameter,
    Reference,
    RequestBody,
    Response,
)
from sanic_ext.extensions.openapi.types import Schema

from api_shared.media import JSON
from api_shared.openapi.dialect import COMPONENTS, component_name, component_schemas
from api_shared.openapi.shapes import Error, PageEnvelope
from api_shared.paging import DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET, allowed_sorts

F = TypeVar("F", bound=Callable[..., Any])
Parameters = list[dict[str, Any] | Parameter | str]
"""What ``openapi.definition(parameter=...)`` takes."""

BEARER_AUTH = "bearerAuth"
UUID_LENGTH = 36  # a UUID's text: every id in a path or a filter


def schema_ref(model: type[BaseModel], *, response: bool = False) -> Reference:
    """Register ``model`` (and the models it uses) as components; a reference to it."""
    spec = SpecificationBuilder()
    name = component_name(model)
    if not spec.has_component("schemas", name):
        for component, schema in component_schemas(model, response=response).items():
            if not spec.has_component("schemas", component):
                spec.add_component("schemas", component, schema)
    return Reference(COMPONENTS.format(model=name))


class _Response(Response):
    """sanic-ext's Response keeps only the fields it declares: this one declares headers."""

    headers: dict[str, Any]


# Every string a header holds has a bound (docs/api.md#limits): these are what the servers
# write, so a client may size its buffers by them.
REQUEST_ID_HEADER: Mapping[str, Any] = {
    "description": "The request's id, as received (when well formed) or made up; in the logs.",
    "required": True,
    # api_shared.request_id: what it accepts from a client, and the 32 hex digits it makes.
    "schema": {"type": "string", "maxLength": 128, "pattern": "^[A-Za-z0-9][A-Za-z0-9._:-]*$"},
}
REQUEST_ID: Mapping[str, Any] = {"X-Request-ID": REQUEST_ID_HEADER}
WWW_AUTHENTICATE: Mapping[str, Any] = {
    "WWW-Authenticate": {
        "description": "The bearer challenge (RFC 6750).",
        "required": True,
        "schema": {"type": "string", "maxLength": 256, "pattern": "^Bearer"},
    }
}
LOCATION: Mapping[str, Any] = {
    "Location": {
        "description": "The path of the created resource.",
        "required": True,
        "schema": {"type": "string", "maxLength": 256, "pattern": "^/"},
    }
}
RETRY_AFTER: Mapping[str, Any] = {
    "Retry-After": {
        "description": "Seconds to wait before trying again.",
        "required": True,
        "schema": {"type": "string", "maxLength": 10, "pattern": "^[0-9]+$"},
    }
}
ETAG: Mapping[str, Any] = {
    "ETag": {
        "description": "The strong entity tag of this version, for If-Match.",
        "required": True,
        "schema": {"type": "string", "maxLength": 128, "pattern": '^"[^"]*"$'},
    }
}

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


def _operation(func: Any) -> Any:
    return OperationStore()[func]


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
        _operation(func).responses[str(status)] = _Response(
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
        _operation(func).responses[str(status)] = _Response(
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
        operation = _operation(func)
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
        operation = _operation(func)
        if optional:
            operation.security.append({})
        operation.secured(BEARER_AUTH)
        # A token that is sent must be valid, even where none is required.
        operation.responses["401"] = _error_response(401, WWW_AUTHENTICATE)
        return func

    return document


def json_body(
    model: type[BaseModel],
    *,
    media_types: Iterable[str] = (JSON,),
    description: str = "",
    required: bool = True,
) -> RequestBody:
    """A JSON request body of ``model`` (for ``openapi.definition(body=...)``); ``required``
    False where the operation also takes none."""
    return RequestBody(
        dict.fromkeys(media_types, schema_ref(model)),
        required=required,
        description=description or None,
    )


def path_id(name: str, description: str) -> Parameter:
    """A path id: a UUID (a malformed one is answered 404, docs/api.md#representation)."""
    return Parameter(
        name,
        Schema(type="string", format="uuid", maxLength=UUID_LENGTH),
        "path",
        description=description,
        required=True,
    )


class _ContentParameter(Parameter):
    """sanic-ext's Parameter has a schema; this one is given per media type instead (OpenAPI's
    ``content``), as a parameter holding JSON text is."""

    content: dict[str, Any]
    __ignore__ = ["schema"]  # noqa: RUF012 - sanic-ext's own class attribute


def json_query_parameter(
    name: str, schema: Mapping[str, Any], description: str
) -> Callable[[F], F]:
    """Document an optional query parameter holding the JSON text of a ``schema`` value."""

    def document(func: F) -> F:
        _operation(func).parameters.append(
            _ContentParameter(
                name,
                location="query",
                description=description,
                content={JSON: {"schema": dict(schema)}},
            )
        )
        return func

    return document


def header_parameter(
    name: str, schema: Schema, description: str, *, required: bool = False
) -> Parameter:
    return Parameter(name, schema, "header", description=description, required=required)


def page_parameters(
    sorts: Iterable[str], default_sort: str, filters: Mapping[str, Schema] | None = None
) -> Parameters:
    """``limit``, ``offset``, ``sort`` and the list's filters (docs/api.md#users)."""
    parameters: Parameters = [
        Parameter(
            "limit",
            _limit_schema(DEFAULT_LIMIT),
            "query",
            description=(
                f"Page size: default {DEFAULT_LIMIT}, above {MAX_LIMIT} becomes {MAX_LIMIT}, "
                "below 1 becomes 1; not an integer → 400 VALIDATION_FAILED."
            ),
        ),
        Parameter(
            "offset",
            Schema(type="integer", format="int64", minimum=0, maximum=MAX_OFFSET, default=0),
            "query",
            description=f"Items to skip: default 0; below 0 becomes 0, above {MAX_OFFSET} that.",
        ),
        Parameter(
            "sort",
            Schema(type="string", enum=list(sorts), default=default_sort),
            "query",
            description="A field, descending with a leading '-'; another → 400 BAD_SORT.",
        ),
    ]
    for name, schema in (filters or {}).items():
        parameters.append(
            Parameter(name, schema, "query", description=f"Only items of this {name}.")
        )
    return parameters


def _limit_schema(default: int) -> Schema:
    # The range a client should send; outside it the server clamps (the description says so).
    return Schema(type="integer", format="int32", minimum=1, maximum=MAX_LIMIT, default=default)


def cursor_parameters(default_limit: int = DEFAULT_LIMIT) -> Parameters:
    """``after`` and ``limit`` of a cursor page (docs/api.md#paging-and-sorting)."""
    return [
        Parameter(
            "after",
            Schema(type="integer", format="int64", minimum=0, maximum=MAX_OFFSET, default=0),
            "query",
            description=(
                "Only items after this position (the previous page's `page.next`): default 0; "
                f"above {MAX_OFFSET} becomes that; not a non-negative integer → 400 "
                "VALIDATION_FAILED."
            ),
        ),
        Parameter(
            "limit",
            _limit_schema(default_limit),
            "query",
            description=(
                f"Page size: default {default_limit}, above {MAX_LIMIT} becomes {MAX_LIMIT}, "
                "below 1 becomes 1; not an integer → 400 VALIDATION_FAILED."
            ),
        ),
    ]


def string_enum(values: Iterable[str]) -> Schema:
    return Schema(type="string", enum=[str(value) for value in values])


def list_operation(
    operation: str,
    tag: str,
    item: type[BaseModel],
    description: str,
    *,
    sorts: Sequence[str],
    default_sort: str,
    filters: Mapping[str, Schema] | None = None,
    path: Sequence[Parameter] = (),
    errors: Iterable[int] = (),
) -> Callable[[F], F]:
    """Document a list operation as every list route is: a bearer token, the ``path`` ids and
    the page parameters, a page of ``item`` as its 200 (``description``), and 400 (BAD_SORT,
    BAD_FILTER) with the ``errors`` the route adds."""
    parameters: Parameters = [*path, *page_parameters(allowed_sorts(sorts), default_sort, filters)]
    documents = (
        openapi.definition(operation=operation, tag=tag, parameter=parameters),
        # The item model is a value here, which mypy does not take as a type argument.
        response(200, PageEnvelope[item], description),  # type: ignore[valid-type]
        error_responses(400, *errors),
        bearer_auth(),
    )

    def document(func: F) -> F:
        for step in reversed(documents):  # as the decorators stacked in this order would
            func = step(func)
        return func

    return document
