"""HTTP handlers: GraphQL over HTTP at ``/`` and ``/graphql``, and the sandbox for browsers."""

from __future__ import annotations

import orjson
from sanic import Blueprint, Request
from sanic.response import HTTPResponse
from sanic_ext import openapi

from api_shared.errors import MethodNotAllowedError
from api_shared.request_id import request_id_of
from books_graphql.docs import document_get, document_post
from books_graphql.executor import GraphQLExecutor
from books_graphql.protocol import (
    GraphQLParams,
    check_csrf,
    check_json_body,
    http_status,
    params_from_body,
    params_from_query_string,
    prefers_html,
    response_media_type,
)
from books_graphql.response_cache import ResponseCache, cache_key
from books_graphql.sandbox import SandboxPage

graphql = Blueprint("graphql")


async def handle_graphql(request: Request) -> HTTPResponse:
    accept = request.headers.get("accept")
    is_get = request.method in ("GET", "HEAD")  # HEAD: GET without the body (sanic-ext)
    if is_get and prefers_html(accept):
        return _sandbox(request.app.ctx.sandbox)

    media_type = response_media_type(accept)
    check_csrf(request.headers)
    params = _read_params(request, is_get=is_get)

    executor: GraphQLExecutor = request.app.ctx.graphql
    prepared = executor.prepare(params.query)
    operation_type = prepared.operation_type(params.operation_name)
    if is_get and operation_type not in (None, "query"):
        raise MethodNotAllowedError(
            ["POST"], f"A {operation_type} cannot be sent with GET; use POST."
        )

    async def execute() -> tuple[bytes, int, bool]:
        result = await executor.execute(
            prepared,
            params.query,
            variables=params.variables,
            operation_name=params.operation_name,
            request_id=request_id_of(request),
        )
        status = http_status(media_type, is_request_error=result.is_request_error)
        return orjson.dumps(result.body), status, "errors" not in result.body

    cache: ResponseCache | None = request.app.ctx.responses
    if cache is not None and prepared.errors is None and operation_type == "query":
        key = cache_key(params.query, params.operation_name, params.variables)
        body, status = await cache.fetch(key, execute)
    else:
        body, status, _ = await execute()
    return _graphql_response(body, status, media_type)


def _graphql_response(body: bytes, status: int, media_type: str) -> HTTPResponse:
    return HTTPResponse(body, status=status, headers={"Vary": "Accept"}, content_type=media_type)


def _read_params(request: Request, *, is_get: bool) -> GraphQLParams:
    if is_get:
        return params_from_query_string(request.get_query_args(keep_blank_values=True))
    check_json_body(request.headers.get("content-type"))
    return params_from_body(request.body)


def _sandbox(page: SandboxPage) -> HTTPResponse:
    return HTTPResponse(
        page.html,
        headers={
            "Vary": "Accept",
            "Content-Security-Policy": page.content_security_policy,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
        },
        content_type="text/html; charset=utf-8",
    )


# /graphql is described by OpenAPI (docs), one operation per method; / serves the same.
@document_get
async def get_graphql(request: Request) -> HTTPResponse:
    return await handle_graphql(request)


@document_post
async def post_graphql(request: Request) -> HTTPResponse:
    return await handle_graphql(request)


graphql.add_route(openapi.exclude()(handle_graphql), "/", ["GET", "POST"], name="graphql_root")
graphql.add_route(get_graphql, "/graphql", ["GET"], name="graphql")
graphql.add_route(post_graphql, "/graphql", ["POST"], name="graphql_post")
