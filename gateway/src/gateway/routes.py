"""The gateway's routes: the merged OpenAPI document, its Swagger page, the merged AsyncAPI
document of the events and the proxy on the public port; the upstreams' state (``/status``)
on the admin port."""

from __future__ import annotations

from sanic import Blueprint, Request
from sanic.response import HTTPResponse, html

from api_shared.representation import JSON_CONTENT_TYPE, json_response
from gateway.context import context_of
from gateway.cors import is_preflight, preflight_response
from gateway.docs.cache import MergedDocument
from gateway.routing import ASYNCAPI_DOCUMENT, DOCS_PAGE, OPENAPI_DOCUMENT
from gateway.swagger import SWAGGER_UI

ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

public = Blueprint("public")
admin = Blueprint("admin")


@public.route("/<path:path>", methods=ALL_METHODS, name="proxy")
async def proxy(request: Request, path: str) -> HTTPResponse | None:
    # Every public request but the three below: the context is read once, nothing else added.
    # None: a stream, answered as it went.
    context = context_of(request)
    if is_preflight(request):
        return preflight_response(request, context.cors_origins)
    return await context.pipeline.handle(request)


@public.get(OPENAPI_DOCUMENT, name="openapi")
async def get_openapi(request: Request) -> HTTPResponse:
    context = context_of(request)
    await context.pipeline.admit(request)
    return _document_response(await context.docs.get())


@public.get(ASYNCAPI_DOCUMENT, name="asyncapi")
async def get_asyncapi(request: Request) -> HTTPResponse:
    context = context_of(request)
    await context.pipeline.admit(request)
    return _document_response(await context.events_docs.get())


def _document_response(document: MergedDocument) -> HTTPResponse:
    """The merged document's bytes as they are; one still missing a service's part must not
    be kept by a cache."""
    headers = {} if document.complete else {"Cache-Control": "no-store"}
    return HTTPResponse(document.body, headers=headers, content_type=JSON_CONTENT_TYPE)


@public.get(DOCS_PAGE, name="docs")
async def get_docs(request: Request) -> HTTPResponse:
    await context_of(request).pipeline.admit(request)
    return html(SWAGGER_UI.html, headers=SWAGGER_UI.headers)


@admin.get("/status", name="status")
async def get_status(request: Request) -> HTTPResponse:
    return json_response(await context_of(request).status.report())
