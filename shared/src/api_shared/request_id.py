"""Request ids: accept a well-formed incoming ``X-Request-ID``, else make one; echo it always."""

from __future__ import annotations

import re
import uuid

from sanic import Request
from sanic.response import BaseHTTPResponse

from api_shared.types import App

REQUEST_ID_HEADER = "X-Request-ID"

# Long or exotic ids would let a client inject text into log lines; refuse them quietly.
_WELL_FORMED = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


def new_request_id() -> str:
    return uuid.uuid4().hex


def choose_request_id(incoming: str | None) -> str:
    """The incoming id when it is well formed, else a new one."""
    if incoming and _WELL_FORMED.fullmatch(incoming):
        return incoming
    return new_request_id()


def request_id_of(request: Request) -> str:
    """The request's id, assigned on first use (errors can arrive before any middleware)."""
    request_id: str | None = getattr(request.ctx, "request_id", None)
    if request_id is None:
        request_id = choose_request_id(request.headers.get(REQUEST_ID_HEADER))
        request.ctx.request_id = request_id
    return request_id


def install_request_ids(app: App) -> None:
    """Give every request an id and echo it on every response."""

    async def assign_request_id(request: Request) -> None:
        request_id_of(request)

    async def echo_request_id(request: Request, response: BaseHTTPResponse) -> None:
        response.headers[REQUEST_ID_HEADER] = request_id_of(request)

    app.register_middleware(assign_request_id, "request", priority=1000)
    app.register_middleware(echo_request_id, "response", priority=1000)
