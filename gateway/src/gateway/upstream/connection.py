"""One keep-alive HTTP/1.1 connection to an upstream: a request written whole, its response
parsed by httptools (llhttp, the parser Sanic reads requests with).

A response body is framed by Content-Length, chunked coding, or the connection's close
(RFC 9112 §6.3); responses to HEAD, and 1xx/204/304, have none. Interim 1xx responses are
skipped. Whatever the body's coding, it is kept as received: a compressed body passes
through untouched.

Failures, as the proxy tells them apart:

- ``UpstreamClosedError``: the connection ended before any byte of the response (the
  request may or may not have been acted on);
- ``UpstreamProtocolError``: the answer is not HTTP, or ended in the middle.
"""

from __future__ import annotations

import asyncio
from typing import cast

from httptools import HttpParserError, HttpParserUpgrade, HttpResponseParser


class UpstreamClosedError(Exception):
    """The connection ended before any byte of the response arrived."""


class UpstreamProtocolError(Exception):
    """The upstream's answer is not HTTP, or it ended before the response was complete."""


class UpstreamResponse:
    """A complete response: status, header fields as received (repeats kept), body."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


def body_ends_at_close(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a response's body runs until the connection closes (no length, not chunked)."""
    fields = [(name.lower(), value.lower()) for name, value in headers]
    return not any(
        name == b"content-length" or (name == b"transfer-encoding" and b"chunked" in value)
        for name, value in fields
    )


class UpstreamConnection(asyncio.Protocol):
    """A connection that carries one request at a time; reusable while ``reusable``."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reusable = False  # true between a complete keep-alive response and the next send
        self._waiter: asyncio.Future[UpstreamResponse] | None = None
        self._parser: HttpResponseParser | None = None
        self._head_only = False
        self._received = False
        self._interim = False
        self._headers_done = False
        self._status = 0
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []

    # Called by the pool.

    def send(self, request: bytes, *, head_only: bool) -> asyncio.Future[UpstreamResponse]:
        """Write ``request`` (head and body); the future completes with the whole response."""
        assert self.transport is not None
        waiter: asyncio.Future[UpstreamResponse] = self._loop.create_future()
        self._waiter = waiter
        self._parser = HttpResponseParser(self)
        self._head_only = head_only
        self._received = self._interim = self._headers_done = False
        self._status = 0
        self._headers = []
        self._body = []
        self.reusable = False
        if self.closed:
            waiter.set_exception(UpstreamClosedError("closed before the request went out"))
        else:
            self.transport.write(request)
        return waiter

    def close(self) -> None:
        self.closed = True
        self.reusable = False
        if self.transport is not None:
            self.transport.close()

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its methods.
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.reusable = False
        if self._waiter is None or self._waiter.done():
            return
        if self._headers_done and body_ends_at_close(self._headers):
            self._finish()  # a body delimited by the connection's close (RFC 9112 §6.3 ¶8)
        elif not self._received:
            self._fail(UpstreamClosedError(exc or "closed"))
        else:
            self._fail(UpstreamProtocolError("the response ended before it was complete"))

    def data_received(self, data: bytes) -> None:
        if self._waiter is None or self._waiter.done() or self._parser is None:
            # Bytes nobody asked for: this connection is out of step, never reuse it.
            self.close()
            return
        self._received = True
        try:
            self._parser.feed_data(data)
        except (HttpParserError, HttpParserUpgrade) as error:
            self._fail(UpstreamProtocolError(str(error)))
            self.close()

    def eof_received(self) -> bool:
        return False  # close: connection_lost decides what the response was

    # httptools callbacks

    def on_message_begin(self) -> None:
        if self._waiter is None or self._waiter.done():
            self.close()  # a second response to one request

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        assert self._parser is not None
        status = self._parser.get_status_code()
        if 100 <= status < 200:
            self._interim = True  # 100 Continue and the like: the final response follows
            return
        self._status = status
        self._headers_done = True
        if self._head_only:
            self._finish()

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            self._headers = []
            return
        if not self._head_only:
            self._finish()

    # internals

    def _finish(self) -> None:
        waiter, parser = self._waiter, self._parser
        if waiter is None or waiter.done() or parser is None:
            return
        self.reusable = not self.closed and parser.should_keep_alive()
        waiter.set_result(UpstreamResponse(self._status, self._headers, b"".join(self._body)))

    def _fail(self, error: Exception) -> None:
        self.reusable = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(error)
