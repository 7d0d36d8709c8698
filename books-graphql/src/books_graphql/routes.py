"""HTTP handlers: GraphQL over HTTP at ``/`` and ``/graphql``, and the sandbox for browsers."""

from __future__ import annotations

from sanic import Blueprint, Request
from sanic.response import HTTPResponse
from sanic_ext import openapi

from api_shared.request_id import request_id_of
from books_graphql.context import context_of
from books_graphql.http.answer import Answer, Caching
from books_graphql.http.answering import answer
from books_graphql.http.cache_headers import NO_STORE, cache_control, etag_of, not_modified
from books_graphql.http.docs import document_get, document_post
from books_graphql.http.protocol import (
    GraphQLParams,
    check_csrf,
    check_json_body,
    negotiate,
    params_from_body,
    params_from_query_string,
)
from books_graphql.http.sandbox import SandboxPage

graphql = Blueprint("graphql")


async def handle_graphql(request: Request) -> HTTPResponse:
    """Read the HTTP request, have it answered (http.answering), write the answer."""
    context = context_of(request)
    negotiation = negotiate(request.headers.get("accept"))
    is_get = request.method in ("GET", "HEAD")  # HEAD: GET without the body (sanic-ext)
    if is_get and context.sandbox is not None and negotiation.prefers_html:
        return _sandbox(context.sandbox)
    # Without the sandbox a browser is answered as any client is (JSON, or 406).

    media_type = negotiation.response_media_type()
    check_csrf(request.headers)
    answered = await answer(
        context,
        _read_params(request, is_get=is_get),
        media_type=media_type,
        queries_only=is_get,
        request_id=request_id_of(request),
    )
    if is_get:
        return _get_response(
            answered,
            media_type,
            request.headers.get("if-none-match"),
            context.settings.http_cache_max_age_s,
        )
    no_store = NO_STORE if answered.caching is Caching.NO_STORE else None
    return _graphql_response(answered.body, answered.status, media_type, no_store)


def _get_response(
    answered: Answer, media_type: str, if_none_match: str | None, max_age_s: int
) -> HTTPResponse:
    """A GET's answer, which HTTP caches may keep and revalidate when it has no errors."""
    if answered.caching is not Caching.REPLAYABLE:
        return _graphql_response(answered.body, answered.status, media_type, NO_STORE)
    etag = etag_of(answered.body, media_type)
    cache_control_value = cache_control(max_age_s)
    if not_modified(if_none_match, etag):
        return HTTPResponse(
            status=304,
            headers={"Vary": "Accept", "ETag": etag, "Cache-Control": cache_control_value},
        )
    response = _graphql_response(answered.body, answered.status, media_type, cache_control_value)
    response.headers["ETag"] = etag
    return response


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


# /graphql is described by OpenAPI (http.docs), one operation per method; / serves the same.
@document_get
async def get_graphql(request: Request) -> HTTPResponse:
    return await handle_graphql(request)


@document_post
async def post_graphql(request: Request) -> HTTPResponse:
    return await handle_graphql(request)


graphql.add_route(openapi.exclude()(handle_graphql), "/", ["GET", "POST"], name="graphql_root")
graphql.add_route(get_graphql, "/graphql", ["GET"], name="graphql")
graphql.add_route(post_graphql, "/graphql", ["POST"], name="graphql_post")
