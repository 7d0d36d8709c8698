"""books-graphql's OpenAPI description of GraphQL over HTTP at ``/graphql`` (GET and POST).

Published by sanic-ext at ``/docs/openapi.json`` like every service's; the gateway merges it
with the others. It describes the transport (requests, media types, statuses); the schema
itself is GraphQL's to describe, by introspection. ``/`` serves the same and is left out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from sanic_ext import openapi
from sanic_ext.extensions.openapi.definitions import Parameter
from sanic_ext.extensions.openapi.types import Schema

from api_shared.openapi.parameters import (
    Parameters,
    header_parameter,
    json_body,
    json_query_parameter,
)
from api_shared.openapi.responses import error_responses, response_content
from api_shared.openapi.shapes import Error
from api_shared.openapi.store import schema_ref
from api_shared.representation import NOT_BLANK_PATTERN
from books_graphql.http.protocol import GRAPHQL_RESPONSE_JSON, HTML, JSON, PREFLIGHT_HEADERS
from books_graphql.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])
TAG = "books"
# The bounds of what a request carries (docs/api.md#operations): a document of up to
# BOOKS_MAX_QUERY_BYTES (this default; the operator's setting rules) in a body. A GET's
# parameters and headers share the 8 KiB the HTTP server allows a request line and headers
# (else 413): bounds that fit in it together, percent-encoded, with a token beside them.
QUERY_MAX_LENGTH = Settings.model_fields["max_query_bytes"].default
GET_QUERY_MAX_LENGTH = 2048
GET_TEXT_MAX_LENGTH = 256


class GraphQLRequest(BaseModel):
    """A GraphQL request (GraphQL over HTTP)."""

    model_config = ConfigDict(extra="allow")

    query: str = Field(min_length=1, json_schema_extra={"maxLength": QUERY_MAX_LENGTH})
    variables: dict[str, JsonValue] | None = None
    # A name of an operation of the document: never longer than the document.
    operationName: str | None = Field(  # noqa: N815 - the protocol's name
        default=None, json_schema_extra={"maxLength": QUERY_MAX_LENGTH}
    )
    extensions: dict[str, JsonValue] | None = None


class GraphQLLocation(BaseModel):
    line: int = Field(ge=1)
    column: int = Field(ge=1)


class GraphQLError(BaseModel):
    """One error; ``extensions.code`` says which (e.g. BAD_USER_INPUT, QUERY_TOO_DEEP)."""

    message: str
    locations: list[GraphQLLocation] | None = None
    path: list[str | int] | None = None
    extensions: dict[str, JsonValue] | None = None


class GraphQLResponse(BaseModel):
    """A GraphQL response: ``data`` once execution began, ``errors`` if any."""

    data: dict[str, JsonValue] | None = None
    errors: list[GraphQLError] | None = Field(default=None, min_length=1)
    extensions: dict[str, JsonValue] | None = None


def _answers(*, get: bool) -> Callable[[F], F]:
    """The responses of ``/graphql`` for one method."""
    graphql = schema_ref(GraphQLResponse)
    ok: dict[str, Any] = {JSON: graphql, GRAPHQL_RESPONSE_JSON: graphql}
    if get:
        ok[HTML] = {"type": "string"}  # the sandbox, for a browser, where BOOKS_GRAPHIQL is on
    documented = [
        response_content(200, ok, "A GraphQL response (with application/json, also a refusal)"),
        response_content(
            400,
            {JSON: schema_ref(Error), GRAPHQL_RESPONSE_JSON: graphql},
            "A request that is not GraphQL over HTTP (the contract's error), or, with "
            f"{GRAPHQL_RESPONSE_JSON}, a document refused before execution",
        ),
        response_content(
            405,
            {JSON: schema_ref(Error)},
            "METHOD_NOT_ALLOWED: a mutation sent with GET",
            headers={"Allow": {"required": True, "schema": {"type": "string"}}},
        ),
        error_responses(503, body=not get),
    ]

    def document(func: F) -> F:
        for decorate in documented:
            func = decorate(func)
        return func

    return document


def _query_parameter(name: str, description: str, *, required: bool = False) -> Parameter:
    # ``query`` must hold more than whitespace (protocol._params strips it).
    if required:
        schema = Schema(type="string", maxLength=GET_QUERY_MAX_LENGTH, pattern=NOT_BLANK_PATTERN)
    else:
        schema = Schema(type="string", maxLength=GET_TEXT_MAX_LENGTH)
    return Parameter(name, schema, "query", description=description, required=required)


JSON_OBJECT_PARAMETERS = [
    json_query_parameter(
        name,
        {"type": "object"},
        "A JSON object (empty: absent); any other JSON → 400 VALIDATION_FAILED",
    )
    for name in ("variables", "extensions")
]


GET_PARAMETERS: Parameters = [
    _query_parameter(
        "query",
        "The GraphQL document (a query: others need POST; a long one too: a GET's request "
        "line and headers must fit in 8 KiB, else 413)",
        required=True,
    ),
    _query_parameter("operationName", "The operation of the document to run"),
    # Required: without it (or the other preflight header, which OpenAPI cannot offer as an
    # alternative) a GET is refused (protocol.check_csrf). A value that is only blanks is
    # empty once the HTTP parser trims it, and an empty one does not count.
    header_parameter(
        PREFLIGHT_HEADERS[0],
        Schema(type="string", maxLength=GET_TEXT_MAX_LENGTH, pattern=r"\S"),
        f"A GET from a script carries this (or {PREFLIGHT_HEADERS[1]}), not empty, else it "
        "is refused as a possible cross-site request forgery (400 VALIDATION_FAILED); a "
        "browser loading the sandbox (Accept: text/html, where it is on) needs neither",
        required=True,
    ),
]


def document_get(func: F) -> F:
    for document_parameter in JSON_OBJECT_PARAMETERS:
        func = document_parameter(func)
    decorated = openapi.definition(
        operation="getGraphql",
        summary="A GraphQL query in the query string (queries only)",
        tag=TAG,
        parameter=GET_PARAMETERS,
    )(_answers(get=True)(func))
    return decorated


def document_post(func: F) -> F:
    decorated = openapi.definition(
        operation="postGraphql",
        summary="The book catalog (GraphQL over HTTP)",
        tag=TAG,
        body=json_body(GraphQLRequest),
    )(_answers(get=False)(func))
    return decorated
