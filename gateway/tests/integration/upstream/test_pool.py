"""The proxy's HTTP client against real sockets: framing, keep-alive, failures, limits.

Each test runs on asyncio's loop and on uvloop (conftest). The upstream
is a scripted TCP server: it reads one request head (and its body, by Content-Length) at a
time and writes what the test's ``answer`` returns for it (given the request and its number
on that connection, from 1); None closes the connection without answering, ``ThenClose``
answers and then closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest

from gateway.upstream.connection import UpstreamClosedError, UpstreamProtocolError
from gateway.upstream.pool import ConnectFailedError, UpstreamPool


class ThenClose(bytes):
    """A reply after which the upstream closes the connection."""


Answer = Callable[[bytes, int], bytes | None]

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
GET = b"Accept: */*\r\n\r\n"


@dataclass
class Upstream:
    url: str
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0  # accepted so far
    open_now: int = 0
    most_open: int = 0
    closed_by_client: int = 0


@contextlib.asynccontextmanager
async def scripted(answer: Answer, *, delay_s: float = 0.0) -> AsyncIterator[Upstream]:
    upstream = Upstream("")

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream.connections += 1
        upstream.open_now += 1
        upstream.most_open = max(upstream.most_open, upstream.open_now)
        try:
            for number in itertools.count(1):
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    upstream.closed_by_client += 1
                    return
                length = _content_length(head)
                request = head + (await reader.readexactly(length) if length else b"")
                upstream.requests.append(request)
                await asyncio.sleep(delay_s)
                reply = answer(request, number)
                if reply is None:
                    return
                writer.write(reply)
                await writer.drain()
                if isinstance(reply, ThenClose):
                    return
        finally:
            upstream.open_now -= 1
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    upstream.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        yield upstream
    finally:
        server.close()


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


def new_pool(
    *,
    connect_timeout_s: float = 2.0,
    total_timeout_s: float = 5.0,
    limit: int = 256,
    idle_s: float = 15.0,
) -> UpstreamPool:
    return UpstreamPool(
        connect_timeout_s=connect_timeout_s,
        total_timeout_s=total_timeout_s,
        limit=limit,
        idle_s=idle_s,
    )


async def test_the_request_goes_out_whole_and_a_keep_alive_connection_is_reused() -> None:
    async with scripted(lambda request, number: OK) as upstream:
        pool = new_pool()
        body = b'{"a":1}'
        rest = b"Content-Type: application/json\r\nContent-Length: 7\r\n\r\n" + body
        first = await pool.send(upstream.url, "POST", b"/orders?x=1", rest, idempotent=False)
        second = await pool.send(upstream.url, "GET", b"/orders", GET, idempotent=True)
        pool.close()

    assert (first.status, first.body, second.body) == (200, b"ok", b"ok")
    host = upstream.url.removeprefix("http://").encode()
    assert upstream.requests[0] == b"POST /orders?x=1 HTTP/1.1\r\nHost: " + host + b"\r\n" + rest
    assert upstream.connections == 1


async def test_a_chunked_body_is_joined_and_repeated_headers_are_kept_in_order() -> None:
    reply = (
        b"HTTP/1.1 201 Created\r\nSet-Cookie: a=1\r\nTransfer-Encoding: chunked\r\n"
        b"Set-Cookie: b=2\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"
    )
    async with scripted(lambda request, number: reply) as upstream:
        pool = new_pool()
        response = await pool.send(upstream.url, "GET", b"/", GET, idempotent=True)
        again = await pool.send(upstream.url, "GET", b"/", GET, idempotent=True)
        pool.close()

    assert response.status == 201
    assert response.body == again.body == b"abcdefg"
    cookies = [value for name, value in response.headers if name.lower() == b"set-cookie"]
    assert cookies == [b"a=1", b"b=2"]
    assert upstream.connections == 1


async def test_a_body_read_until_the_close_is_complete_and_its_connection_is_not_reused() -> None:
    reply = ThenClose(b"HTTP/1.1 200 OK\r\n\r\nuntil the end")
    async with scripted(lambda request, number: reply) as upstream:
        pool = new_pool()
        first = await pool.send(upstream.url, "GET", b"/", GET, idempotent=True)
        second = await pool.send(upstream.url, "GET", b"/", GET, idempotent=True)
        pool.close()

    assert first.body == second.body == b"until the end"
    assert upstream.connections == 2


async def test_head_204_and_304_responses_have_no_body_and_keep_the_connection() -> None:
    replies = {
        b"HEAD": b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n",
        b"GET /204": b"HTTP/1.1 204 No Content\r\n\r\n",
        b"GET /304": b"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
    }

    def answer(request: bytes, number: int) -> bytes:
        return next(reply for start, reply in replies.items() if request.startswith(start))

    async with scripted(answer) as upstream:
        pool = new_pool()
        head = await pool.send(upstream.url, "HEAD", b"/", GET, idempotent=True)
        no_content = await pool.send(upstream.url, "GET", b"/204", GET, idempotent=True)
        not_modified = await pool.send(upstream.url, "GET", b"/304", GET, idempotent=True)
        pool.close()

    assert (head.status, no_content.status, not_modified.status) == (200, 204, 304)
    assert head.body == no_content.body == not_modified.body == b""
    assert upstream.connections == 1


async def test_an_interim_100_continue_is_skipped() -> None:
    reply = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody"
    async with scripted(lambda request, number: reply) as upstream:
        pool = new_pool()
        response = await pool.send(upstream.url, "GET", b"/", GET, idempotent=True)
        pool.close()

    assert (response.status, response.body) == (200, b"body")


async def test_a_compressed_body_passes_through_untouched() -> None:
    compressed = gzip.compress(b"x" * 100)
    reply = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%b" % (
        len(compressed),
        compressed,
    )
    async with scripted(lambda request, number: reply) as upstream:
        pool = new_pool()
        response = await pool.send(upstream.url, "GET", b"/", GET, idempotent=True)
        pool.close()

    assert response.body == compressed
    assert (b"Content-Encoding", b"gzip") in response.headers


async def test_connection_close_and_http_1_0_answers_are_not_reused() -> None:
    replies = [
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
        OK,
    ]
    async with scripted(lambda request, number: replies[len(upstream.requests) - 1]) as upstream:
        pool = new_pool()
        for _ in replies:
            assert (await pool.send(upstream.url, "GET", b"/", GET, idempotent=True)).body == b"ok"
        pool.close()

    assert upstream.connections == 3


async def test_an_idle_connection_the_upstream_closed_is_not_used() -> None:
    # The upstream answers as if it kept the connection, then closes it while it is idle.
    async with scripted(lambda request, number: ThenClose(OK)) as upstream:
        pool = new_pool()
        await pool.send(upstream.url, "GET", b"/", GET, idempotent=True)
        await asyncio.sleep(0.1)  # the close arrives while the connection is idle
        # Not idempotent, so never sent twice: it succeeds only if it went out on a fresh one.
        second = await pool.send(upstream.url, "POST", b"/", GET, idempotent=False)
        pool.close()

    assert second.body == b"ok"
    assert (upstream.connections, len(upstream.requests)) == (2, 2)


async def test_a_connection_idle_longer_than_the_idle_limit_is_closed_not_used() -> None:
    async with scripted(lambda request, number: OK) as upstream:
        pool = new_pool(idle_s=0.05)
        await pool.send(upstream.url, "GET", b"/", GET, idempotent=True)
        await asyncio.sleep(0.2)
        await pool.send(upstream.url, "GET", b"/", GET, idempotent=True)
        await asyncio.sleep(0.05)  # the old connection's close reaches the upstream
        pool.close()

    assert upstream.connections == 2
    assert upstream.closed_by_client >= 1


async def test_a_request_cut_on_a_reused_connection_is_resent_once_only_when_idempotent() -> None:
    # Each connection answers its first request and hangs up on its second: the upstream
    # closing a kept-alive connection just as the next request goes out on it.
    async with scripted(lambda request, number: OK if number == 1 else None) as upstream:
        pool = new_pool()
        await pool.send(upstream.url, "GET", b"/", GET, idempotent=True)
        retried = await pool.send(upstream.url, "GET", b"/", GET, idempotent=True)
        with pytest.raises(UpstreamClosedError):
            await pool.send(upstream.url, "POST", b"/", GET, idempotent=False)
        pool.close()

    assert retried.body == b"ok"
    assert upstream.connections == 2  # the cut GET went again on a fresh connection


async def test_an_answer_that_is_not_http_or_is_cut_short_is_a_protocol_error() -> None:
    for reply in (
        b"this is not HTTP at all\r\n\r\n",
        ThenClose(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"),
        ThenClose(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"),
    ):

        def answer(request: bytes, number: int, reply: bytes = reply) -> bytes:
            return reply

        async with scripted(answer) as upstream:
            pool = new_pool()
            with pytest.raises(UpstreamProtocolError):
                await pool.send(upstream.url, "GET", b"/", GET, idempotent=True)
            pool.close()


async def test_a_refused_connection_is_a_connect_failure() -> None:
    async with scripted(lambda request, number: OK) as upstream:
        url = upstream.url
    pool = new_pool()

    with pytest.raises(ConnectFailedError) as failure:
        await pool.send(url, "GET", b"/", GET, idempotent=True)

    assert isinstance(failure.value.cause, OSError)


async def test_an_upstream_slower_than_the_total_timeout_is_a_timeout() -> None:
    async with scripted(lambda request, number: OK, delay_s=5) as upstream:
        pool = new_pool(total_timeout_s=0.2)
        with pytest.raises(TimeoutError):
            await pool.send(upstream.url, "GET", b"/", GET, idempotent=True)
        pool.close()


async def test_connections_per_replica_are_limited_and_waiting_past_the_connect_timeout_fails() -> (
    None
):
    async with scripted(lambda request, number: OK, delay_s=0.3) as upstream:
        pool = new_pool(limit=2)
        answers = await asyncio.gather(
            *(pool.send(upstream.url, "GET", b"/", GET, idempotent=True) for _ in range(5))
        )
        assert [a.body for a in answers] == [b"ok"] * 5
        assert upstream.most_open == 2

        short = new_pool(limit=1, connect_timeout_s=0.1)
        busy = asyncio.ensure_future(short.send(upstream.url, "GET", b"/", GET, idempotent=True))
        await asyncio.sleep(0.05)
        with pytest.raises(ConnectFailedError):
            await short.send(upstream.url, "GET", b"/", GET, idempotent=True)
        assert (await busy).body == b"ok"
        pool.close()
        short.close()


async def test_closing_the_pool_closes_its_connections() -> None:
    async with scripted(lambda request, number: OK) as upstream:
        pool = new_pool()
        await pool.send(upstream.url, "GET", b"/", GET, idempotent=True)
        pool.close()
        await asyncio.sleep(0.1)

        assert upstream.closed_by_client == 1
