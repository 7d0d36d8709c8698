"""The streams' client: the gateway's own HTTP/1.1 client, asking one replica for a stream over
a connection of the stream's own, and what a failure before the answer comes to.

A stream lives for minutes: its connection is never taken from, nor given back to, the
keep-alive pool (``pool``), whose connections serve whole answers. It is opened to the
replica's address as the pool's are, carries ``Connection: close`` and is closed once the
stream ends. Its response is parsed as it arrives (``reader``): the head, then the body's
pieces, each read bounded by the idle timeout on its own. Reading stops while the client is
slow to take what was read (the copy waits for its writes), and the socket's buffer then
fills: asyncio's stream reader pauses the transport, so nothing piles up here.
"""

from __future__ import annotations

import asyncio

from sanic.response import HTTPResponse

from api_shared import tracing
from api_shared.errors import BadGatewayError, UpstreamTimeoutError
from gateway.upstream.connection import (
    UpstreamClosedError,
    UpstreamProtocolError,
    UpstreamResponse,
)
from gateway.upstream.failover import DisconnectedError, NotConnectedError
from gateway.upstream.message import client_response
from gateway.upstream.pool import ConnectFailedError, ReplicaAddress
from gateway.upstream.reader import ResponseReader

READ_SIZE = 65536  # at most this much per read: a frame of events seldom comes near it
_CLOSE = b"Connection: close\r\n"  # the connection ends with the stream, never reused

# What a failure before the answer may be: the pool's and the connection's, and the timeout.
ClientFailure = ConnectFailedError | UpstreamClosedError | UpstreamProtocolError | TimeoutError
_CLIENT_FAILURES = (ConnectFailedError, UpstreamClosedError, UpstreamProtocolError, TimeoutError)


class StreamIdleError(Exception):
    """No byte came from the upstream within the idle timeout."""


class UpstreamStream:
    """A replica's 2xx answer, its body still to come over the stream's own connection."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,  # kept: a writer collected unclosed closes its transport
        response: ResponseReader,
        idle_timeout_s: float,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._response = response
        self.idle_timeout_s = idle_timeout_s
        self.status = response.status
        self.headers = response.headers  # as received, repeats kept

    async def read(self) -> bytes:
        """The body's next bytes as they arrive, as received (a compressed body stays
        compressed); empty once the body has ended.

        Raises ``StreamIdleError`` when nothing came for ``idle_timeout_s``, and
        ``UpstreamProtocolError`` when the upstream broke the stream off.
        """
        response = self._response
        while not (data := response.take()):
            if response.complete:
                return b""
            try:
                async with asyncio.timeout(self.idle_timeout_s):
                    await _receive(self._reader, response)
            except TimeoutError:
                raise StreamIdleError(f"nothing for {self.idle_timeout_s} s") from None
        return data

    def close(self) -> None:
        """Close the connection now, wherever the body is: it is never reused."""
        self._writer.close()


class StreamClient:
    """Asks replicas for streams, each over a connection of its own."""

    def __init__(
        self, *, connect_timeout_s: float, head_timeout_s: float, idle_timeout_s: float
    ) -> None:
        self.connect_timeout_s = connect_timeout_s
        self.head_timeout_s = head_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self._addresses: dict[str, ReplicaAddress] = {}  # parsed once per base URL

    async def ask(
        self, method: str, base_url: str, origin: str, fields: bytes
    ) -> UpstreamStream | HTTPResponse:
        """One replica's answer: a 2xx one open, its body still to come; any other whole.

        ``origin``: the target in origin form; ``fields``: the header lines after Host, the
        blank line and the body (``message.upstream_fields``).
        """
        span = None
        if tracing.tracing_enabled():
            span = tracing.start_client_span(method, base_url + origin.partition("?")[0])
            if span is not None:
                fields = span.header_lines + fields
        address = self._addresses.get(base_url)
        if address is None:
            address = self._addresses[base_url] = ReplicaAddress.of(base_url)
        request = address.request_line(method, origin.encode("latin-1")) + _CLOSE + fields
        try:
            async with asyncio.timeout(self.head_timeout_s):
                answer = await self._exchange(address, request)
        except _CLIENT_FAILURES as error:
            if span is not None:
                span.end(error=error)
            raise _failure(error) from error
        except BaseException as error:
            if span is not None:
                span.end(error=error)
            raise
        if span is not None:
            span.end(status=answer.status)
        return answer

    async def _exchange(
        self, address: ReplicaAddress, request: bytes
    ) -> UpstreamStream | HTTPResponse:
        """Connect, send ``request`` and read the answer's head (a non-2xx answer whole)."""
        reader, writer = await self._connect(address)
        response = ResponseReader()
        try:
            try:
                writer.write(request)
                await writer.drain()
            except OSError as error:  # nothing of the response came: as a closed connection
                raise UpstreamClosedError(repr(error)) from error
            while not response.head_done:
                await _receive(reader, response)
            if 200 <= response.status < 300:
                return UpstreamStream(reader, writer, response, self.idle_timeout_s)
            while not response.complete:
                await _receive(reader, response)
        except BaseException:
            writer.transport.abort()  # cut short: the connection is of no further use
            raise
        writer.close()
        whole = UpstreamResponse(response.status, response.headers, response.take())
        return client_response(whole)

    async def _connect(
        self, address: ReplicaAddress
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A new connection to ``address``, within the connect timeout (ConnectFailedError
        past it, as when it is refused). The head timeout, if it comes first, is the caller's."""
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                return await asyncio.open_connection(
                    address.host,
                    address.port,
                    ssl=address.ssl,
                    server_hostname=address.host if address.ssl else None,
                    limit=READ_SIZE,
                )
        except (TimeoutError, OSError) as error:
            raise ConnectFailedError(error) from error


async def _receive(reader: asyncio.StreamReader, response: ResponseReader) -> None:
    """Feed ``response`` what the connection gives next (its end, if it has closed)."""
    if response.failure is not None:  # what came before it was taken: now it is raised
        raise response.failure
    try:
        data = await reader.read(READ_SIZE)
    except OSError as error:  # reset: as a close, but never a clean one
        if not response.received:
            raise UpstreamClosedError(repr(error)) from error
        raise UpstreamProtocolError(f"the connection broke: {error!r}") from error
    if data:
        response.feed(data)
    else:
        response.end()


def _failure(error: ClientFailure) -> Exception:
    """What a failure before the answer comes to, as for ``proxy``'s requests: another try,
    or the contract's error."""
    if isinstance(error, ConnectFailedError):
        return NotConnectedError(error.cause)
    if isinstance(error, TimeoutError):
        return UpstreamTimeoutError()
    if isinstance(error, UpstreamClosedError):
        # The connection broke after the request went out: a GET may go to the next replica.
        return DisconnectedError(error)
    return BadGatewayError()
