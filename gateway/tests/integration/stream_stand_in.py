"""A webhooks-service stand-in for ``GET /api/events/stream`` over real sockets, driven by the
test: each request it receives arrives as a ``StreamCall``, whose frames the test sends one
at a time, whose end it chooses (clean, or broken off), and which tells when the gateway has
closed its connection.

Written on asyncio's own server, not a web framework: a test needs to see the very moment
its connection closes, and to end a chunked body cleanly or not at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import orjson

WAIT_S = 15.0  # a generous bound on any wait here, never a measured figure
STREAM_PATH = "/api/events/stream"
READY = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"

STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\n"
    b"Content-Type: text/event-stream; charset=utf-8\r\n"
    b"Cache-Control: no-store\r\n"
    b"X-Accel-Buffering: no\r\n"
    b"Transfer-Encoding: chunked\r\n"
    b"\r\n"
)


def frame(event_id: str, event_type: str = "orders.order.shipped") -> bytes:
    """One event's frame, as webhooks-service writes it."""
    data = orjson.dumps({"id": event_id, "type": event_type}).decode()
    return f"id: {event_id}\nevent: {event_type}\ndata: {data}\n\n".encode()


def error_response(status: int, code: str, *extra: tuple[str, str]) -> bytes:
    """A whole JSON error in the contract's shape, as webhooks-service answers before a
    stream starts."""
    body = orjson.dumps({"error": {"code": code, "message": f"{code} from upstream"}})
    fields = [
        ("Content-Type", "application/json"),
        ("Content-Length", str(len(body))),
        *extra,
    ]
    head = f"HTTP/1.1 {status} X\r\n" + "".join(f"{n}: {v}\r\n" for n, v in fields) + "\r\n"
    return head.encode() + body


class _Close(enum.Enum):
    END = "end"  # the last chunk, then close
    BREAK = "break"  # close in the middle


@dataclass(eq=False)
class StreamCall:
    """One request the stand-in received, and its answer while it lasts."""

    head: bytes  # the request line and header block, as received
    _outbox: asyncio.Queue[bytes | _Close] = field(default_factory=asyncio.Queue)
    gone: asyncio.Event = field(default_factory=asyncio.Event)  # the gateway closed it

    @property
    def target(self) -> str:
        return self.head.split(b" ", 2)[1].decode()

    @property
    def headers(self) -> dict[str, str]:
        """Its header fields, by lower-case name."""
        lines = self.head.decode("latin-1").split("\r\n")[1:]
        pairs = [line.split(":", 1) for line in lines if line]
        return {name.strip().lower(): value.strip() for name, value in pairs}

    def send(self, data: bytes) -> None:
        """Write ``data`` as one chunk of the stream."""
        self._outbox.put_nowait(data)

    def end(self) -> None:
        """End the stream cleanly: its last chunk, then the connection closes."""
        self._outbox.put_nowait(_Close.END)

    def break_off(self) -> None:
        """Close the connection in the middle of the stream, without its last chunk."""
        self._outbox.put_nowait(_Close.BREAK)

    async def closed_by_gateway(self) -> None:
        async with asyncio.timeout(WAIT_S):
            await self.gone.wait()


Answer = Callable[[StreamCall], bytes | None]
"""What to answer a call: bytes, a whole response; None, a stream the test drives."""


def streams(call: StreamCall) -> bytes | None:
    return None


@dataclass
class StreamUpstream:
    url: str = ""
    calls: asyncio.Queue[StreamCall] = field(default_factory=asyncio.Queue)

    async def next_call(self) -> StreamCall:
        async with asyncio.timeout(WAIT_S):
            return await self.calls.get()


@contextlib.asynccontextmanager
async def stream_upstream(answer: Answer = streams) -> AsyncIterator[StreamUpstream]:
    """The stand-in on a free loopback port; one request per connection. Requests for other
    paths than the stream's get 200 and are not the test's calls."""
    upstream = StreamUpstream()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        call = StreamCall(head)
        if not call.target.startswith(STREAM_PATH):
            writer.write(READY)  # the gateway's probes (/ready), say: not the test's calls
            await writer.drain()
            writer.close()
            return
        upstream.calls.put_nowait(call)
        whole = answer(call)
        try:
            if whole is not None:
                writer.write(whole)
                await writer.drain()
                return
            writer.write(STREAM_HEAD)
            await writer.drain()
            await _stream(call, reader, writer)
        except ConnectionError:
            call.gone.set()
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    upstream.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        yield upstream
    finally:
        server.close()


async def _stream(
    call: StreamCall, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Write the chunks the test sends until it ends the stream or the gateway closes it."""

    async def watch() -> None:
        with contextlib.suppress(ConnectionError):
            while await reader.read(65536):
                pass  # a GET has nothing more to send: only its close comes
        call.gone.set()

    watching = asyncio.create_task(watch())
    try:
        while True:
            outgoing = asyncio.ensure_future(call._outbox.get())
            await asyncio.wait({outgoing, watching}, return_when=asyncio.FIRST_COMPLETED)
            if not outgoing.done():
                outgoing.cancel()
                return  # the gateway closed the connection
            data = outgoing.result()
            if data is _Close.BREAK:
                writer.transport.abort()
                return
            if data is _Close.END:
                writer.write(b"0\r\n\r\n")
                await writer.drain()
                return
            writer.write(b"%x\r\n%b\r\n" % (len(data), data))
            await writer.drain()
    finally:
        watching.cancel()


async def read_until(chunks: AsyncIterator[bytes], end: bytes = b"\n\n") -> bytes:
    """What a client's ``chunks`` bring up to the first ``end`` (a frame, by default)."""
    received = b""
    async with asyncio.timeout(WAIT_S):
        async for chunk in chunks:
            received += chunk
            if end in received:
                return received
    raise AssertionError(f"the stream ended before {end!r}: {received!r}")


async def read_rest(chunks: AsyncIterator[bytes]) -> bytes:
    """The rest of a client's stream once it has ended (raises unless it ended cleanly)."""
    async with asyncio.timeout(WAIT_S):
        return b"".join([chunk async for chunk in chunks])
