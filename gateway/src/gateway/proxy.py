"""Forwarding a request to an upstream with aiohttp, and mapping its failures to the contract.

- connection refused / DNS / reset before an answer → 503 UNAVAILABLE (+ Retry-After);
- no answer within the timeout → 504 UPSTREAM_TIMEOUT;
- an answer that is not HTTP → 502 BAD_GATEWAY;
- the upstream's own responses, errors included, pass through unchanged.
Idempotent methods are retried once, on the next replica, when the connection failed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
from sanic import Request
from sanic.compat import Header
from sanic.response import HTTPResponse
from yarl import URL

from api_shared.errors import (
    ApiError,
    BadGatewayError,
    UnavailableError,
    UpstreamTimeoutError,
)
from api_shared.request_id import REQUEST_ID_HEADER, request_id_of
from gateway.clientip import IPNetwork, forwarded_for_chain
from gateway.upstreams import Target, Upstream

logger = logging.getLogger("gateway.proxy")

# RFC 9110 §7.6.1: connection-specific headers never cross a proxy.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# Recomputed for the new message by whoever sends it.
_NOT_FORWARDED = HOP_BY_HOP | {"host", "content-length"}
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})

FailureListener = Callable[[str, str], None]
"""Called with (upstream name, failure kind) for every upstream failure."""


@dataclass(frozen=True, slots=True)
class _ConnectError(Exception):
    """The connection was never established: safe to try another replica."""

    cause: BaseException


def _end_to_end(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop hop-by-hop headers, including any the ``Connection`` header names."""
    named = {
        token.strip().lower()
        for name, value in items
        if name.lower() == "connection"
        for token in value.split(",")
    }
    return [(n, v) for n, v in items if n.lower() not in _NOT_FORWARDED and n.lower() not in named]


class Proxy:
    """Sends requests to upstreams over one pooled aiohttp session."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        timeout_s: float,
        connect_timeout_s: float,
        trusted_proxies: tuple[IPNetwork, ...] = (),
        on_failure: FailureListener | None = None,
    ) -> None:
        self.session = session
        self.timeout = aiohttp.ClientTimeout(total=timeout_s, connect=connect_timeout_s)
        self.trusted_proxies = trusted_proxies
        self.on_failure = on_failure or (lambda upstream, kind: None)

    async def forward(self, request: Request, upstream: Upstream) -> HTTPResponse:
        """The upstream's response to ``request``, or the contract error for its failure."""
        retryable = request.method in IDEMPOTENT_METHODS
        candidates = upstream.candidates()
        attempts = candidates[:2] if retryable else candidates[:1]
        for attempt, target in enumerate(attempts, start=1):
            try:
                response = await self._send(request, target)
            except _ConnectError as failure:
                upstream.mark_down(target)
                self.on_failure(upstream.name, "connect")
                logger.warning(
                    "upstream connection failed",
                    extra={
                        "upstream": upstream.name,
                        "target": target.url,
                        "error": type(failure.cause).__name__,
                        "attempt": attempt,
                    },
                )
                continue
            except ApiError as error:
                self.on_failure(upstream.name, error.code.lower())
                raise
            upstream.mark_up(target)
            return response
        raise UnavailableError(f"The {upstream.name} service is unavailable; try again shortly.")

    async def _send(self, request: Request, target: Target) -> HTTPResponse:
        url = URL(target.url + request.raw_url.decode("latin-1"), encoded=True)
        try:
            async with self.session.request(
                request.method,
                url,
                headers=self._upstream_headers(request),
                data=request.body or None,
                allow_redirects=False,
                timeout=self.timeout,
            ) as upstream_response:
                body = await upstream_response.read()
                headers = _end_to_end(list(upstream_response.headers.items()))
                return HTTPResponse(body, status=upstream_response.status, headers=Header(headers))
        except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as error:
            raise _ConnectError(error) from error
        except (TimeoutError, aiohttp.ServerTimeoutError):
            raise UpstreamTimeoutError() from None
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
            # The connection broke after the request went out: it may have been acted on.
            raise UnavailableError("The upstream service closed the connection.") from None
        except aiohttp.ClientError:
            raise BadGatewayError() from None

    def _upstream_headers(self, request: Request) -> list[tuple[str, str]]:
        headers = _end_to_end(list(request.headers.items()))
        headers = [(n, v) for n, v in headers if not n.lower().startswith("x-forwarded-")]
        peer = request.conn_info.client_ip if request.conn_info else ""
        headers += [
            (
                "X-Forwarded-For",
                forwarded_for_chain(
                    peer, request.headers.get("x-forwarded-for"), self.trusted_proxies
                ),
            ),
            ("X-Forwarded-Proto", request.scheme),
            ("X-Forwarded-Host", request.headers.get("host", "")),
        ]
        headers = [(n, v) for n, v in headers if n.lower() != REQUEST_ID_HEADER.lower()]
        headers.append((REQUEST_ID_HEADER, request_id_of(request)))
        return headers


def new_session() -> aiohttp.ClientSession:
    """One keep-alive pool per process, created at server start (it binds to the loop)."""
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=256, ttl_dns_cache=60)
    # auto_decompress=False: compressed bodies pass through untouched, with their headers.
    return aiohttp.ClientSession(
        connector=connector, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar()
    )


async def close_session(session: aiohttp.ClientSession) -> None:
    await session.close()
    await asyncio.sleep(0)  # let the connector's transports close before the loop stops
