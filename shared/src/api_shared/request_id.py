"""Request ids: accept a well-formed incoming ``X-Request-ID``, else make one; echo it always.

While a request is handled its id is also the context's ``current_request_id``: every log
line written meanwhile carries it (api_shared.logging), and calls to other services forward
it (``forwarded_headers``), so one id follows a request through every process.
"""

from __future__ import annotations

import re
import secrets
from contextvars import ContextVar

from sanic import Request
from sanic.response import BaseHTTPResponse

REQUEST_ID_HEADER = "X-Request-ID"

# Long or exotic ids would let a client inject text into log lines; refuse them quietly.
_WELL_FORMED = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")

current_request_id: ContextVar[str | None] = ContextVar("current_request_id", default=None)
"""The id of the request being handled in this context, or None outside any request."""


def new_request_id() -> str:
    # 128 random bits in hex, like uuid4().hex without building a UUID on every request.
    return secrets.token_hex(16)


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


def forwarded_headers() -> dict[str, str]:
    """``X-Request-ID`` of the request being handled, for a call made on its behalf."""
    request_id = current_request_id.get()
    return {REQUEST_ID_HEADER: request_id} if request_id is not None else {}


def assign_request_id(request: Request) -> None:
    """Give the request its id and make it the context's (the frame's first step)."""
    current_request_id.set(request_id_of(request))


def echo_request_id(request: Request, response: BaseHTTPResponse) -> None:
    """Echo the request's id on its response, and leave the context without one."""
    response.headers[REQUEST_ID_HEADER] = request_id_of(request)
    # A keep-alive connection handles its requests in one task, so one context: the next
    # request's early log lines must not carry this one's id. Nothing that logs runs after
    # this (api_shared.service_app: the frame's last step; only the trace's end follows).
    current_request_id.set(None)
