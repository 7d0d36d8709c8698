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

from api_shared.openapi.operations import (
    Parameters,
    error_responses,
    header_parameter,
    json_body,
    response_content,
    schema_ref,
)
from api_shared.openapi.shapes import Error
from books_graphql.protocol import GRAPHQL_RESPONSE_JSON, HTML, JSON, PREFLIGHT_HEADERS

F = TypeVar("F", bound=Callable[..., Any])
TAG = "books"


class GraphQLRequest(BaseModel):
    """A GraphQL request (GraphQL over HTTP)."""

    model_config = ConfigDict(extra="allow")

    query: str = Field(min_length=1)
    variables: dict[str, JsonValue] | None = None
    operationName: str | None = None  # noqa: N815 - the protocol's name
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
        ok[HTML] = {"type": "string"}  # the sandbox, for a browser
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
    schema = Schema(type="string", minLength=1) if required else Schema(type="string")
    return Parameter(name, schema, "query", description=description, required=required)


GET_PARAMETERS: Parameters = [
    _query_parameter("query", "The GraphQL document (a query: others need POST)", required=True),
    _query_parameter("variables", "A JSON object"),
    _query_parameter("operationName", "The operation of the document to run"),
    _query_parameter("extensions", "A JSON object"),
    header_parameter(
        PREFLIGHT_HEADERS[0],
        Schema(type="string", minLength=1),
        f"A GET from a script carries this (or {PREFLIGHT_HEADERS[1]}), else it is refused "
        "as a possible cross-site request forgery; browsers' page loads need neither",
    ),
]


def document_get(func: F) -> F:
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
