"""Keep-alive connections to the upstream replicas: the proxy's HTTP client.

Per replica (base URL) at most ``limit`` connections at once; a request finds an idle one
(the most recently used), else opens one, else waits for one to come back. Timeouts:

- ``connect_timeout_s`` bounds getting a connection (waiting for a free one included):
  past it, ``ConnectFailedError``, as when the connection is refused;
- ``total_timeout_s`` bounds the whole exchange: past it, ``TimeoutError``.

A connection is kept only after a complete response that allows it (not ``Connection:
close``, not HTTP/1.0 without keep-alive, not a body read until the close); an idle one the
upstream has closed is noticed (``connection_lost``) and never used; one idle longer than
``IDLE_S`` is closed, well before the services' own keep-alive timeout (75 s), so that the
upstream rarely closes a connection as a request goes out on it. When that happens anyway
(nothing of the response came back), an idempotent request is sent again, once, on a fresh
connection.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from dataclasses import dataclass
from urllib.parse import urlsplit

from gateway.upstream.connection import UpstreamClosedError, UpstreamConnection, UpstreamResponse

IDLE_S = 15.0  # aiohttp's keep-alive timeout, which this client replaces


class ConnectFailedError(Exception):
    """No connection could be had: refused, unresolvable, or not within the connect timeout."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(repr(cause))
        self.cause = cause


@dataclass(frozen=True, slots=True)
class ReplicaAddress:
    """Where a replica listens, and how every request to it begins: a base URL, parsed once."""

    host: str
    port: int
    ssl: ssl.SSLContext | None  # for https only
    host_line: bytes  # the Host header, CRLF-terminated
    prefix: bytes  # a base URL may carry a path: every target goes after it

    @classmethod
    def of(cls, base_url: str) -> ReplicaAddress:
        parts = urlsplit(base_url)
        secure = parts.scheme == "https"
        return cls(
            host=parts.hostname or "",
            port=parts.port or (443 if secure else 80),
            ssl=ssl.create_default_context() if secure else None,
            host_line=b"Host: " + parts.netloc.encode("idna") + b"\r\n",
            prefix=parts.path.encode("latin-1"),
        )

    def request_line(self, method: str, target: bytes) -> bytes:
        """The request line and Host header for ``target`` (origin form) on this replica."""
        return b"%s %s%s HTTP/1.1\r\n%s" % (
            method.encode("ascii"),
            self.prefix,
            target,
            self.host_line,
        )


class UpstreamPool:
    """The pools of every replica, open until ``close``; made in the loop it serves.

    The loop is kept: ``asyncio.get_running_loop`` costs a ``getpid`` system call.
    """

    def __init__(
        self,
        *,
        connect_timeout_s: float,
        total_timeout_s: float,
        limit: int = 256,
        idle_s: float = IDLE_S,
    ) -> None:
        self.connect_timeout_s = connect_timeout_s
        self.total_timeout_s = total_timeout_s
        self.limit = limit
        self.idle_s = idle_s
        self._loop = asyncio.get_running_loop()
        self._replicas: dict[str, _Replica] = {}

    async def send(
        self, base_url: str, method: str, target: bytes, rest: bytes, *, idempotent: bool
    ) -> UpstreamResponse:
        """Send ``method target`` to the replica at ``base_url``; its complete response.

        ``rest``: the request's header lines after Host, the blank line and the body.
        """
        replica = self._replicas.get(base_url)
        if replica is None:
            replica = self._replicas[base_url] = _Replica(
                self._loop, base_url, self.limit, self.idle_s
            )
        deadline = self._loop.time() + self.total_timeout_s
        head_only = method == "HEAD"
        request = replica.request_line(method, target) + rest
        connection, reused = await replica.acquire(deadline, self.connect_timeout_s)
        try:
            return await replica.exchange(connection, request, deadline, head_only=head_only)
        except UpstreamClosedError:
            if not (reused and idempotent):
                raise
        # The upstream closed an idle connection as the request went out: once more, afresh.
        connection, _ = await replica.acquire(deadline, self.connect_timeout_s, fresh=True)
        return await replica.exchange(connection, request, deadline, head_only=head_only)

    def close(self) -> None:
        for replica in self._replicas.values():
            replica.close()
        self._replicas.clear()


class _Replica:
    """The connections to one base URL."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, base_url: str, limit: int, idle_s: float
    ) -> None:
        self._loop = loop
        self.idle_s = idle_s
        self.address = ReplicaAddress.of(base_url)
        self.request_line = self.address.request_line
        self.limit = limit
        self._idle: deque[tuple[float, UpstreamConnection]] = deque()  # (since, connection)
        self._open: set[UpstreamConnection] = set()
        self._opening = 0  # connections being established
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._closed = False

    async def acquire(
        self, deadline: float, connect_timeout_s: float, *, fresh: bool = False
    ) -> tuple[UpstreamConnection, bool]:
        """An idle connection and True; else (or when ``fresh``) a new one and False."""
        if not fresh and (connection := self._take_idle()) is not None:
            return connection, True
        loop = self._loop
        remaining = deadline - loop.time()
        # The total timeout, when it comes first, is the request's (504), not the connection's.
        limit_s = min(connect_timeout_s, remaining)
        try:
            async with asyncio.timeout(limit_s):
                while len(self._open) + self._opening >= self.limit and not self._closed:
                    if fresh and self._idle:  # make room: a fresh one is what this needs
                        self._forget(self._idle.popleft()[1])
                        continue
                    await self._returned()
                    if not fresh and (connection := self._take_idle()) is not None:
                        return connection, True
                self._opening += 1  # counts against the limit while it connects
                try:
                    address = self.address
                    transport, connection = await loop.create_connection(
                        lambda: UpstreamConnection(loop),
                        address.host,
                        address.port,
                        ssl=address.ssl,
                        server_hostname=address.host if address.ssl else None,
                    )
                except BaseException:
                    self._opening -= 1
                    self._wake()  # the slot it held is free again
                    raise
                self._opening -= 1
        except TimeoutError as error:
            if limit_s >= remaining:
                raise
            raise ConnectFailedError(error) from error
        except OSError as error:
            raise ConnectFailedError(error) from error
        # uvloop returns before it has called connection_made.
        connection.transport = transport
        if self._closed:
            connection.close()
            raise ConnectFailedError(ConnectionAbortedError("the proxy is stopping"))
        self._open.add(connection)
        return connection, False

    async def exchange(
        self, connection: UpstreamConnection, request: bytes, deadline: float, *, head_only: bool
    ) -> UpstreamResponse:
        """Send ``request`` on ``connection``; its response. The connection goes back after."""
        loop = self._loop
        waiter = connection.send(request, head_only=head_only)
        timer = loop.call_at(deadline, _expire, waiter)
        try:
            response = await waiter
        except BaseException:
            connection.close()  # an exchange cut short leaves the connection out of step
            raise
        finally:
            timer.cancel()
            self._release(connection, loop.time())
        return response

    def close(self) -> None:
        self._closed = True
        for connection in self._open:
            connection.close()
        self._open.clear()
        self._idle.clear()
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _take_idle(self) -> UpstreamConnection | None:
        """The most recently used idle connection still open and not idle too long, if any."""
        now = self._loop.time()
        while self._idle:
            since, connection = self._idle.pop()
            if connection.reusable and now - since <= self.idle_s:
                return connection
            # The upstream closed it while it was idle, or may be about to.
            self._forget(connection)
        return None

    def _release(self, connection: UpstreamConnection, now: float) -> None:
        if not connection.reusable or self._closed:
            self._forget(connection)
            return
        idle = self._idle
        # The oldest are on the left: close those idle too long (the upstream may be about to).
        while idle and now - idle[0][0] > self.idle_s:
            self._forget(idle.popleft()[1])
        idle.append((now, connection))
        self._wake()

    def _forget(self, connection: UpstreamConnection) -> None:
        connection.close()
        self._open.discard(connection)
        self._wake()

    async def _returned(self) -> None:
        """Wait until a connection comes back or goes away."""
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def _wake(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return


def _expire(waiter: asyncio.Future[UpstreamResponse]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())
