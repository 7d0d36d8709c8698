"""Forwarding a streamed answer (Server-Sent Events) as it arrives, never buffered.

The route table marks the streaming routes (gateway.routing); the edge pipeline admits their
GET requests as any other, then hands them here instead of to ``proxy``, whose client reads
each response whole. What crosses, headers both ways, is ``message``'s, as for every request.

The client is the gateway's own (``stream_client``): each stream gets a connection of its
own, outside the keep-alive pool, whose body is read as it arrives (``reader``), each read
bounded on its own (the idle timeout), and which is closed when the stream ends. The pool's
hot path, for every other request, stays as it is: whole answers only.

- Before the answer, as ``proxy``: a connection refused, or broken before the response → the
  next replica, once (a GET), else 503 UNAVAILABLE; no response head within ``head_timeout_s``
  (``UPSTREAM_TIMEOUT_S``) → 504 UPSTREAM_TIMEOUT; an answer that is not HTTP → 502.
- An answer that is not 2xx (401, 403, 429, 503...) is read whole within that timeout and
  passes through as every other does.
- A 2xx answer is written to the client chunk by chunk as it arrives. No total timeout; the
  stream ends when the upstream ends it (the client's response then ends cleanly, with its
  last chunk), after ``idle_timeout_s`` without a byte from the upstream
  (``GATEWAY_STREAM_IDLE_TIMEOUT_S``: cleanly too), when the client goes (the upstream
  connection is closed at once), when the server stops (``OpenStreams.end_all``: cleanly, at
  once, so that the client reconnects to another replica with ``Last-Event-ID``), or when the
  upstream breaks it off (the client's connection is cut too: a truncated stream must not
  look complete).
- At most ``OpenStreams.limit`` (``GATEWAY_MAX_STREAMS``) at once: one more is 503.
- Nothing is buffered for a slow client: the copy waits for its writes (Sanic's flow
  control), and meanwhile reads nothing, so the upstream's own send timeout applies; a client
  that stops reading is dropped by Sanic's response timeout (60 s without a write).

A stream's access line is written when it ends: its whole duration, the bytes it carried and
why it ended (``streamEnd``). Metrics and the traces' spans end with its head.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import cast

from sanic import Request
from sanic.http import Http
from sanic.response import BaseHTTPResponse, HTTPResponse

from api_shared.errors import UnavailableError
from api_shared.logging import defer_access_line, log_deferred_access
from api_shared.responses import Response
from gateway.upstream.connection import UpstreamProtocolError
from gateway.upstream.failover import FailureListener, first_answer
from gateway.upstream.message import client_headers, origin_form, upstream_fields
from gateway.upstream.replicas import Upstream
from gateway.upstream.stream_client import StreamClient, StreamIdleError, UpstreamStream

logger = logging.getLogger(__name__)

# Why a stream ended: its access line's ``streamEnd``.
UPSTREAM_ENDED = "upstream ended"
IDLE = "idle timeout"
SHUTDOWN = "shutdown"
CLIENT_GONE = "client gone"
UPSTREAM_BROKEN = "upstream broken"


class OpenStream:
    """One stream being served: the task copying its body, why it was ended (if it was), and
    how many body bytes it has written to the client."""

    __slots__ = ("copy", "ended_by", "sent")

    def __init__(self) -> None:
        self.copy: asyncio.Task[None] | None = None
        self.ended_by: str | None = None
        self.sent = 0

    def end(self, reason: str) -> None:
        """End the stream now: its copy stops wherever it is (between two chunks)."""
        if self.ended_by is None:
            self.ended_by = reason
        if self.copy is not None:
            self.copy.cancel()


class OpenStreams:
    """The streams this process serves: at most ``limit`` at once; all ended when the server
    stops, and none opened after."""

    def __init__(self, limit: int, on_count: Callable[[int], None] = lambda count: None) -> None:
        self.limit = limit
        self.on_count = on_count
        self.stopping = False
        self._open: set[OpenStream] = set()

    def __len__(self) -> int:
        return len(self._open)

    @contextlib.contextmanager
    def slot(self) -> Iterator[OpenStream]:
        """A stream's place for the block: 503 UNAVAILABLE beyond ``limit``, or once stopping
        (the client tries again, on another replica)."""
        if self.stopping:
            raise UnavailableError("This gateway is stopping; reconnect.")
        if len(self._open) >= self.limit:
            raise UnavailableError("This gateway holds its most open streams; try again shortly.")
        stream = OpenStream()
        self._open.add(stream)
        self.on_count(len(self._open))
        try:
            yield stream
        finally:
            self._open.discard(stream)
            self.on_count(len(self._open))

    def end_all(self) -> None:
        """End every stream at once and refuse new ones: the server is stopping."""
        self.stopping = True
        for stream in list(self._open):
            stream.end(SHUTDOWN)


class StreamProxy:
    """Forwards the streaming routes' requests over the streams' client (``stream_client``).

    A Resource, as ``proxy.Proxy``; it has nothing to open or close: each stream opens its own
    connection and closes it when it ends, and ``OpenStreams.end_all`` ends them all when the
    server stops.
    """

    def __init__(
        self,
        streams: OpenStreams,
        *,
        connect_timeout_s: float,
        head_timeout_s: float,
        idle_timeout_s: float,
        on_failure: FailureListener | None = None,
    ) -> None:
        self.streams = streams
        self.client = StreamClient(
            connect_timeout_s=connect_timeout_s,
            head_timeout_s=head_timeout_s,
            idle_timeout_s=idle_timeout_s,
        )
        self.on_failure = on_failure or (lambda upstream, kind: None)

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def forward(
        self,
        request: Request,
        upstream: Upstream,
        client_address: str,
        forwarded_for: str,
        finish_head: Callable[[BaseHTTPResponse], None],
    ) -> HTTPResponse | None:
        """Answer ``request`` with the upstream's stream (then None: it is answered), or return
        the upstream's whole answer when it is not 2xx; or raise the contract error its failure
        comes to. ``finish_head`` adds to the stream's head what the pipeline adds to every
        response (the limit headers).

        ``client_address`` and ``forwarded_for``: as for ``Proxy.forward``.
        """
        # A bad header is the client's failure, before any upstream is asked.
        fields = upstream_fields(request, client_address, forwarded_for)
        origin = origin_form(request.raw_url.decode("latin-1"))
        request.ctx.upstream = upstream.name
        with self.streams.slot() as stream:
            started = time.perf_counter()
            try:
                answer = await first_answer(
                    upstream,
                    lambda target: self.client.ask(request.method, target.url, origin, fields),
                    idempotent=True,  # a GET
                    on_failure=self.on_failure,
                )
            finally:
                request.ctx.upstream_duration_s = time.perf_counter() - started
            if isinstance(answer, HTTPResponse):
                return answer
            try:
                if stream.ended_by is not None:  # the server began to stop meanwhile
                    raise UnavailableError("This gateway is stopping; reconnect.")
                head = Response(status=answer.status, headers=client_headers(answer.headers))
                finish_head(head)
                await self._relay(request, head, answer, stream)
            finally:
                answer.close()  # at once, whatever ended the stream: no connection kept
        return None

    async def _relay(
        self, request: Request, head: Response, source: UpstreamStream, stream: OpenStream
    ) -> None:
        """Send ``head``, then ``source``'s body as it arrives, until the stream ends."""
        defer_access_line(request)
        response: BaseHTTPResponse = head
        copying: asyncio.Task[None] | None = None
        reason = CLIENT_GONE  # unless the copy says otherwise: Sanic cancelled this task
        try:
            response = await request.respond(head)
            await response.send(b"")  # the head now, however long the first chunk takes
            copying = stream.copy = asyncio.create_task(_copy(source, response, stream))
            if stream.ended_by is not None:
                copying.cancel()  # ended while the head went out
            reason = await _outcome(copying, stream)
        finally:
            if copying is not None:
                copying.cancel()  # this task was cancelled (the client went): the copy too
            log_deferred_access(request, response, responseBytes=stream.sent, streamEnd=reason)
        # uvloop's transports are not asyncio's classes, but have their methods.
        transport = cast(asyncio.WriteTransport, request.transport)
        if reason == UPSTREAM_BROKEN:
            transport.abort()  # no last chunk: the client must not take it for a whole stream
        elif reason != CLIENT_GONE and not transport.is_closing():
            if reason == SHUTDOWN and isinstance(request.stream, Http):
                request.stream.keep_alive = False  # the connection closes after the last chunk
            await response.send(end_stream=True)


async def _copy(source: UpstreamStream, sink: BaseHTTPResponse, stream: OpenStream) -> None:
    """Write each chunk of ``source``'s body to ``sink`` as it arrives, as received (a
    compressed body stays compressed)."""
    while chunk := await source.read():
        await sink.send(chunk)
        stream.sent += len(chunk)


async def _outcome(copying: asyncio.Task[None], stream: OpenStream) -> str:
    """Why the stream ended, once ``copying`` has."""
    try:
        await copying
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # Sanic cancels a handler whose client went: the caller's finally says so
        # Ended here (the server stops), or a write found the client gone.
        return stream.ended_by or CLIENT_GONE
    except StreamIdleError:
        return IDLE
    except UpstreamProtocolError as error:
        logger.warning(
            "upstream stream broken", extra={"error": type(error).__name__, "detail": str(error)}
        )
        return UPSTREAM_BROKEN
    except Exception:
        # Not the upstream's doing, but the stream is as broken: it is cut the same way.
        logger.exception("stream copy failed")
        return UPSTREAM_BROKEN
    return UPSTREAM_ENDED
