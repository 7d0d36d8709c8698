"""HTTP handlers: GraphQL over HTTP at ``/`` and ``/graphql``, and the sandbox for browsers."""

from __future__ import annotations

import logging

import orjson
from sanic import Blueprint, Request
from sanic.response import HTTPResponse
from sanic_ext import openapi

from api_shared.errors import MethodNotAllowedError
from api_shared.request_id import request_id_of
from books_graphql.catalog_snapshot import CatalogSnapshot, CatalogSnapshots
from books_graphql.context import context_of
from books_graphql.docs import document_get, document_post
from books_graphql.http_cache import NO_STORE, cache_control, etag_of, not_modified
from books_graphql.persisted_queries import Refusal
from books_graphql.protocol import (
    GraphQLParams,
    check_csrf,
    check_json_body,
    http_status,
    negotiate,
    params_from_body,
    params_from_query_string,
)
from books_graphql.response_cache import cache_key
from books_graphql.sandbox import SandboxPage

graphql = Blueprint("graphql")

logger = logging.getLogger(__name__)


async def handle_graphql(request: Request) -> HTTPResponse:
    context = context_of(request)
    negotiation = negotiate(request.headers.get("accept"))
    is_get = request.method in ("GET", "HEAD")  # HEAD: GET without the body (sanic-ext)
    if is_get and context.sandbox is not None and negotiation.prefers_html:
        return _sandbox(context.sandbox)
    # Without the sandbox a browser is answered as any client is (JSON, or 406).

    media_type = negotiation.response_media_type()
    check_csrf(request.headers)
    params = _read_params(request, is_get=is_get)
    persisted_queries = context.persisted_queries
    persisted = persisted_queries.resolve(params.query, params.extensions)
    if isinstance(persisted, Refusal):
        return _graphql_response(persisted.body(), persisted.status, media_type, NO_STORE)
    query = params.query if persisted is None else persisted.query
    assert query is not None  # protocol: only a persisted query may come without one

    executor = context.graphql.executor
    prepared = executor.prepare(query)
    if persisted is not None and persisted.register_as and prepared.errors is None:
        persisted_queries.register(persisted.register_as, query)
    operation_type = prepared.operation_type(params.operation_name)
    if is_get and operation_type not in (None, "query"):
        raise MethodNotAllowedError(
            ["POST"], f"A {operation_type} cannot be sent with GET; use POST."
        )

    plannable = prepared.errors is None and operation_type == "query"
    catalog = context.catalog
    snapshot = await _current_snapshot(catalog) if plannable and catalog is not None else None

    replayable = [True]  # an answer from the cache, or shared with a running request, is

    async def execute() -> tuple[bytes, int, bool]:
        if snapshot is not None:
            planned = context.graphql.fast_path.execute(
                snapshot,
                query,
                variables=params.variables,
                operation_name=params.operation_name,
            )
            if planned is not None:
                return orjson.dumps(planned), 200, True
        result = await executor.execute(
            prepared,
            query,
            variables=params.variables,
            operation_name=params.operation_name,
            request_id=request_id_of(request),
        )
        status = http_status(media_type, is_request_error=result.is_request_error)
        replayable[0] = "errors" not in result.body
        return orjson.dumps(result.body), status, replayable[0]

    cache = context.responses
    # Without a known catalog version (its check failed), nothing is replayed.
    if cache is not None and plannable and (catalog is None or snapshot is not None):
        key = cache_key(query, params.operation_name, params.variables)
        version = 0 if snapshot is None else snapshot.version
        body, status = await cache.fetch(key, execute, version=version)
    else:
        body, status, _ = await execute()
    if not is_get:
        return _graphql_response(body, status, media_type)
    if not replayable[0]:
        return _graphql_response(body, status, media_type, NO_STORE)
    etag = etag_of(body, media_type)
    cache_control_value = cache_control(context.settings.http_cache_max_age_s)
    if not_modified(request.headers.get("if-none-match"), etag):
        return HTTPResponse(
            status=304,
            headers={"Vary": "Accept", "ETag": etag, "Cache-Control": cache_control_value},
        )
    response = _graphql_response(body, status, media_type, cache_control_value)
    response.headers["ETag"] = etag
    return response


async def _current_snapshot(catalog: CatalogSnapshots) -> CatalogSnapshot | None:
    """The catalog in memory, or None when its version cannot be read (Tartiflette answers,
    through the resolvers, which report an outage as one)."""
    try:
        return await catalog.current()
    except Exception:  # the database's failure, whatever its driver calls it
        logger.warning("catalog version check failed; executing with the resolvers", exc_info=True)
        return None


def _graphql_response(
    body: bytes, status: int, media_type: str, cache_control_value: str | None = None
) -> HTTPResponse:
    headers = {"Vary": "Accept"}
    if cache_control_value is not None:
        headers["Cache-Control"] = cache_control_value
    return HTTPResponse(body, status=status, headers=headers, content_type=media_type)


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
