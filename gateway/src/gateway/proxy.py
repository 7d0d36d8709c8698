"""Forwarding a request to an upstream with aiohttp, and mapping its failures to the contract.

- connection refused / DNS / reset before an answer → 503 UNAVAILABLE (+ Retry-After);
- no answer within the timeout → 504 UPSTREAM_TIMEOUT;
- an answer that is not HTTP → 502 BAD_GATEWAY;
- the upstream's own responses, errors included, pass through unchanged.
Idempotent methods are retried once, on the next replica, when the connection failed, or
broke before an answer: a replica that is shutting down closes its idle keep-alive connections,
and a request already on its way over one of them may be cut (RFC 9112 §9.3.1; retrying an
idempotent request is allowed by RFC 9110 §9.2.2).
The request's ``ctx`` records the upstream and the time spent on it (metrics, access line).
A client's trace context (``traceparent``, ``tracestate``, ``baggage``) is not forwarded:
traces start at the gateway (api_shared.tracing), whose client span injects its own.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

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
    ValidationFailedError,
)
from api_shared.request_id import REQUEST_ID_HEADER, request_id_of
from gateway.clientip import IPNetwork, forwarded_for, forwarded_for_chain, peer_of
from gateway.upstreams import Target, Upstream

logger = logging.getLogger(__name__)

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
# A public client's: it must not choose trace ids, force sampling or plant baggage.
_TRACE_CONTEXT = frozenset({"traceparent", "tracestate", "baggage"})
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
_FIELD_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 §5.1 token
_UNSENDABLE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\ud800-\udfff]")  # controls, non-UTF-8

FailureListener = Callable[[str, str], None]
"""Called with (upstream name, failure kind) for every upstream failure."""


@dataclass(frozen=True, slots=True)
class _ConnectError(Exception):
    """The connection was never established: safe to try another replica."""

    cause: BaseException


@dataclass(frozen=True, slots=True)
class _DisconnectedError(Exception):
    """The connection broke before an answer: only an idempotent request may be sent again."""

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


def _origin_form(request_target: str) -> str:
    """The path and query of a request target, as sent (still percent-encoded).

    Clients may send the absolute form ``GET http://host/orders`` (RFC 9112 §3.2.2); the
    upstream gets the origin form ``/orders``, never a second scheme and host.
    """
    if request_target.startswith("/"):
        return request_target
    parts = urlsplit(request_target)
    path = parts.path if parts.path.startswith("/") else f"/{parts.path}"
    return path + (f"?{parts.query}" if parts.query else "")


def _checked(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers to forward, or VALIDATION_FAILED when one cannot be forwarded as received.

    Bytes that are not UTF-8 reach Sanic as surrogates, which aiohttp silently drops on the
    way out: ``X-Forwarded\\xe9-For`` would pass the gateway's filters and arrive upstream as
    ``X-Forwarded-For``. NUL and other controls make aiohttp raise (RFC 9110 §5.5 says to
    reject them). Either way the upstream would not see what the gateway checked.
    """
    for name, value in headers:
        if not _FIELD_NAME.fullmatch(name) or _UNSENDABLE.search(value):
            shown = name.encode("ascii", "backslashreplace").decode()
            raise ValidationFailedError(
                f"The request header {shown!r} has characters that cannot be forwarded."
            )
    return headers


class Proxy:
    """Sends requests to upstreams over one pooled aiohttp session, open while the server runs.

    A Resource (api_shared.context): ``start`` opens the session, ``stop`` closes it.
    """

    session: aiohttp.ClientSession  # from start() on

    def __init__(
        self,
        *,
        timeout_s: float,
        connect_timeout_s: float,
        trusted_proxies: tuple[IPNetwork, ...] = (),
        on_failure: FailureListener | None = None,
    ) -> None:
        self.timeout = aiohttp.ClientTimeout(total=timeout_s, connect=connect_timeout_s)
        self.trusted_proxies = trusted_proxies
        self.on_failure = on_failure or (lambda upstream, kind: None)

    async def start(self) -> None:
        self.session = new_session()

    async def stop(self) -> None:
        await self.session.close()
        await asyncio.sleep(0)  # let the connector's transports close before the loop stops

    async def forward(self, request: Request, upstream: Upstream) -> HTTPResponse:
        """The upstream's response to ``request``, or the contract error for its failure."""
        headers = self._upstream_headers(request)  # a bad header is the client's failure
        request.ctx.upstream = upstream.name
        started = time.perf_counter()
        try:
            return await self._forward(request, upstream, headers)
        finally:
            request.ctx.upstream_duration_s = time.perf_counter() - started

    async def _forward(
        self, request: Request, upstream: Upstream, headers: list[tuple[str, str]]
    ) -> HTTPResponse:
        retryable = request.method in IDEMPOTENT_METHODS
        candidates = upstream.candidates()
        attempts = candidates[:2] if retryable else candidates[:1]
        for attempt, target in enumerate(attempts, start=1):
            try:
                response = await self._send(request, target, headers)
            except _ConnectError as failure:
                upstream.mark_down(target)
                self.on_failure(upstream.name, "connect")
                _log_retry("upstream connection failed", upstream, target, failure.cause, attempt)
                continue
            except _DisconnectedError as failure:
                self.on_failure(upstream.name, "disconnect")
                if not retryable:
                    # It may have been acted on: the client decides (Idempotency-Key).
                    raise UnavailableError("The upstream service closed the connection.") from None
                _log_retry(
                    "upstream connection closed before an answer",
                    upstream,
                    target,
                    failure.cause,
                    attempt,
                )
                continue
            except ApiError as error:
                self.on_failure(upstream.name, error.code.lower())
                raise
            upstream.mark_up(target)
            return response
        raise UnavailableError(f"The {upstream.name} service is unavailable; try again shortly.")

    async def _send(
        self, request: Request, target: Target, headers: list[tuple[str, str]]
    ) -> HTTPResponse:
        url = URL(target.url + _origin_form(request.raw_url.decode("latin-1")), encoded=True)
        try:
            async with self.session.request(
                request.method,
                url,
                headers=headers,
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
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as error:
            # The connection broke after the request went out: it may have been acted on.
            raise _DisconnectedError(error) from error
        except aiohttp.ClientError:
            raise BadGatewayError() from None

    def _upstream_headers(self, request: Request) -> list[tuple[str, str]]:
        headers = _checked(_end_to_end(list(request.headers.items())))
        headers = [
            (n, v)
            for n, v in headers
            if not n.lower().startswith("x-forwarded-") and n.lower() not in _TRACE_CONTEXT
        ]
        chain = forwarded_for_chain(peer_of(request), forwarded_for(request), self.trusted_proxies)
        headers += [
            ("X-Forwarded-For", chain),
            ("X-Forwarded-Proto", request.scheme),
            ("X-Forwarded-Host", request.headers.get("host", "")),
        ]
        headers = [(n, v) for n, v in headers if n.lower() != REQUEST_ID_HEADER.lower()]
        headers.append((REQUEST_ID_HEADER, request_id_of(request)))
        return headers


def new_session() -> aiohttp.ClientSession:
    """One keep-alive pool per process, opened at server start (it binds to the loop)."""
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=256, ttl_dns_cache=60)
    # auto_decompress=False: compressed bodies pass through untouched, with their headers.
    return aiohttp.ClientSession(
        connector=connector, auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar()
    )


def _log_retry(
    message: str, upstream: Upstream, target: Target, cause: BaseException, attempt: int
) -> None:
    """One warning line per failed attempt on a replica (the next one may answer)."""
    logger.warning(
        message,
        extra={
            "upstream": upstream.name,
            "target": target.url,
            "error": type(cause).__name__,
            "attempt": attempt,
        },
    )
