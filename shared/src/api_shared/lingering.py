"""Lingering close: a refusal sent before the body was read reaches the client.

Sanic answers 413 as soon as it sees a ``Content-Length`` above the limit, then closes the
connection while the client is still uploading. A socket closed with unread data in its
receive buffer sends a TCP reset, and the client's kernel discards whatever it had not yet
read, the 413 included: the client sees a connection error instead of the answer.

The same holds for a head over Sanic's limit (8 KiB): it is refused 413 once that much is
read, with the rest of the head still on its way; over a slow or long path (a swarm's
overlay network) the rest arrives after the close, and the reset destroys the 413.

So, as nginx does (``lingering_close``), a connection that ends with input not read to the
end — a request body, or a head refused before its end (its bytes still in Sanic's buffer)
— is half-closed once the answer has been written (the client reads the answer and EOF),
then what the client still sends is read and dropped until the client closes its side, for
at most ``LINGER_S`` and ``LINGER_MAX_BYTES``: an uploader cannot hold the connection longer
than that. Every other close (an idle keep-alive connection, a graceful shutdown, a
complete request) is Sanic's own.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sanic.http import Http
from sanic.server.protocols.http_protocol import HttpProtocol

LINGER_S = 2.0
LINGER_MAX_BYTES = 4 * 1024 * 1024


class LingeringHttpProtocol(HttpProtocol):
    """Sanic's HTTP/1.1 protocol, with a bounded lingering close after an unread body."""

    __slots__ = ("_last_http", "_linger_timer", "_lingered_bytes")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._last_http: Http | None = None  # Sanic drops its own reference before closing
        self._linger_timer: asyncio.TimerHandle | None = None
        self._lingered_bytes = 0

    def _setup_connection(self, *args: Any, **kwargs: Any) -> None:
        # Sanic's HttpProtocol leaves these two untyped.
        super()._setup_connection(*args, **kwargs)  # type: ignore[no-untyped-call]
        self._last_http = self._http

    def close(self, timeout: float | None = None) -> None:
        if self._linger_timer is not None:
            return  # already lingering: it ends on the client's EOF or at a bound
        if self._input_unread() and self._start_lingering():
            return
        super().close(timeout)

    def data_received(self, data: bytes) -> None:
        if self._linger_timer is None:
            super().data_received(data)
            return
        self._lingered_bytes += len(data)
        if self._lingered_bytes > LINGER_MAX_BYTES:
            self._stop_lingering()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._linger_timer is not None:
            self._linger_timer.cancel()  # the client closed its side: lingering is over
            self._linger_timer = None
        self._last_http = None
        super().connection_lost(exc)  # type: ignore[no-untyped-call]  # untyped in Sanic

    def _input_unread(self) -> bool:
        """Sanic is done with the connection (its task has ended) but not with its input: a
        body not read to its end, or bytes left in its buffer (a head refused as too large
        stays there, unparsed)."""
        # ``request_body`` stays set until the body's last byte has been read.
        http = self._last_http
        body_unread = http is not None and bool(http.request_body)
        return self._task is None and (body_unread or bool(self.recv_buffer))

    def _start_lingering(self) -> bool:
        """Half-close and drain; False when the transport cannot (then close as usual)."""
        transport = self.transport
        if transport is None or transport.is_closing() or not transport.can_write_eof():
            return False
        timeouts: asyncio.TimerHandle | None = self._callback_check_timeouts
        if timeouts is not None:
            timeouts.cancel()  # as Sanic's close does: the request's timeouts no longer apply
        self._last_http = None
        self._linger_timer = self.loop.call_later(LINGER_S, self._stop_lingering)
        transport.write_eof()  # the FIN follows the answer, once that is flushed
        transport.resume_reading()  # Sanic pauses reading when its buffer is full
        self.recv_buffer.clear()
        return True

    def _stop_lingering(self) -> None:
        if self._linger_timer is not None:
            self._linger_timer.cancel()
            self._linger_timer = None
        super().close()
