"""The streams' HTTP client: httpx's ``AsyncClient`` (``stream`` says why not the gateway's
own pool), open while the server runs, asking one replica for its answer (a 2xx one open, its
body still to come); and what a failure before the answer comes to.

The relay (``stream``) reads httpx's answer too: its status and raw headers, its body as it
arrives (``aiter_raw``), ``aclose``, and its read errors (``httpx.ReadTimeout`` is the idle
timeout, any other ``httpx.HTTPError`` breaks the stream off).
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import logging
from urllib.parse import urlsplit

import httpx
from sanic import Request
from sanic.response import HTTPResponse

from api_shared import tracing
from api_shared.errors import BadGatewayError, UpstreamTimeoutError
from gateway.upstream.connection import UpstreamResponse
from gateway.upstream.failover import DisconnectedError, NotConnectedError
from gateway.upstream.message import client_response
from gateway.upstream.pool import IDLE_S

KEEP_ALIVE_CONNECTIONS = 32  # idle ones kept per client: streams seldom end to be reused
# httpcore's words for a connection closed before any response (it raises them as a
# protocol error): like a refused connection, another replica may answer.
_NO_RESPONSE = "without sending a response"


class StreamClient:
    """Asks a replica for a stream over an httpx client of its own, open from ``start`` to
    ``stop``."""

    client: httpx.AsyncClient  # from start() on

    def __init__(
        self,
        *,
        connect_timeout_s: float,
        head_timeout_s: float,
        idle_timeout_s: float,
        max_connections: int,
    ) -> None:
        self.connect_timeout_s = connect_timeout_s
        self.head_timeout_s = head_timeout_s
        self.idle_timeout_s = idle_timeout_s
        self.max_connections = max_connections

    async def start(self) -> None:
        # httpx logs each request at INFO: the stream's access line says it, and more.
        quiet = logging.getLogger("httpx")
        quiet.setLevel(max(quiet.level, logging.WARNING))
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(
                connect=self.connect_timeout_s,
                # Each read on its own: once the head is in, the idle timeout of the stream.
                read=self.idle_timeout_s,
                write=self.head_timeout_s,
                pool=self.connect_timeout_s,
            ),
            limits=httpx.Limits(
                max_connections=self.max_connections,
                max_keepalive_connections=KEEP_ALIVE_CONNECTIONS,
                keepalive_expiry=IDLE_S,
            ),
            # A proxy keeps no cookies, and goes straight to the services whatever the
            # environment says (HTTP_PROXY and the like).
            cookies=http.cookiejar.CookieJar(
                http.cookiejar.DefaultCookiePolicy(allowed_domains=[])
            ),
            trust_env=False,
        )

    async def stop(self) -> None:
        await self.client.aclose()

    async def ask(
        self, request: Request, base_url: str, origin: bytes, headers: list[tuple[bytes, bytes]]
    ) -> httpx.Response | HTTPResponse:
        """One replica's answer: a 2xx one open, its body still to come; any other whole."""
        span = None
        if tracing.tracing_enabled():
            span = tracing.start_client_span(
                request.method, base_url + origin.decode("latin-1").partition("?")[0]
            )
            if span is not None:
                headers = [*headers, *((k.encode(), v.encode()) for k, v in span.fields.items())]
        outgoing = httpx.Request(
            request.method,
            base_url,
            headers=headers,
            content=request.body or None,
            # The target as the client sent it, after the base URL's own path (if any).
            extensions={"target": urlsplit(base_url).path.encode("latin-1") + origin},
        )
        try:
            async with asyncio.timeout(self.head_timeout_s):
                answer = await self.client.send(outgoing, stream=True)
                if not 200 <= answer.status_code < 300:
                    try:
                        body = b"".join([chunk async for chunk in answer.aiter_raw()])
                    finally:
                        await answer.aclose()
        except (TimeoutError, httpx.HTTPError) as error:
            if span is not None:
                span.end(error=error)
            raise _failure(error) from error
        except BaseException as error:
            if span is not None:
                span.end(error=error)
            raise
        if span is not None:
            span.end(status=answer.status_code)
        if 200 <= answer.status_code < 300:
            return answer
        return client_response(UpstreamResponse(answer.status_code, answer.headers.raw, body))


def _failure(error: TimeoutError | httpx.HTTPError) -> Exception:
    """What a failure before the answer comes to: another try, or the contract's error."""
    if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
        return NotConnectedError(error)
    if isinstance(error, TimeoutError | httpx.TimeoutException):
        return UpstreamTimeoutError()
    if isinstance(error, httpx.ReadError | httpx.WriteError):
        return DisconnectedError(error)
    if isinstance(error, httpx.RemoteProtocolError) and _NO_RESPONSE in str(error):
        return DisconnectedError(error)
    return BadGatewayError()
