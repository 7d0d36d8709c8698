"""Forwarding a request to an upstream, and mapping its failures to the contract.

Requests go over the proxy's own keep-alive client (gateway.upstream_pool), faster per
request than aiohttp's; the gateway's other calls (the docs it merges, the status probes) go
over the process's aiohttp session (api_shared.http).

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
The request's header block is built once, as bytes, whichever replica it goes to.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from sanic import Request
from sanic.compat import Header
from sanic.response import HTTPResponse

from api_shared import tracing
from api_shared.client_address import CLIENT_ADDRESS_HEADER
from api_shared.errors import (
    ApiError,
    BadGatewayError,
    UnavailableError,
    UpstreamTimeoutError,
    ValidationFailedError,
)
from api_shared.request_id import REQUEST_ID_HEADER, request_id_of
from api_shared.responses import Response
from gateway.clientip import IPNetwork, forwarded_for, forwarded_for_chain, peer_of
from gateway.upstream_connection import (
    UpstreamClosedError,
    UpstreamProtocolError,
    UpstreamResponse,
)
from gateway.upstream_pool import ConnectFailedError, UpstreamPool
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
# Sent with a Content-Length even when empty (RFC 9110 §8.6: a body is expected).
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
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
    lowered = [(name.lower(), name, value) for name, value in items]
    named = tuple([value for lower, _, value in lowered if lower == "connection"])
    dropped = _dropped_with(named) if named else _NOT_FORWARDED
    return [(name, value) for lower, name, value in lowered if lower not in dropped]


@functools.lru_cache(maxsize=256)  # nearly every message says "keep-alive" or "close"
def _dropped_with(connection: tuple[str, ...]) -> frozenset[str]:
    """``_NOT_FORWARDED`` and the header names the ``Connection`` values list."""
    listed = {token.strip().lower() for value in connection for token in value.split(",")}
    return _NOT_FORWARDED | listed


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

    Bytes that are not UTF-8 reach Sanic as surrogates: the upstream would see other bytes
    than the gateway checked (``X-Forwarded\\xe9-For`` must not pass its filters, then arrive
    as ``X-Forwarded-For``). NUL and other controls, CR and LF above all, would change the
    request itself: RFC 9110 §5.5 says to reject them.
    """
    # One search over every value (a tab, allowed, between them) and names already seen:
    # per header and per request, two regular expressions each cost more than the rest.
    names_known = all(name in _FIELD_NAMES_SEEN for name, _ in headers)
    if names_known and not _UNSENDABLE.search("\t".join([value for _, value in headers])):
        return headers
    for name, value in headers:
        if not _FIELD_NAME.fullmatch(name) or _UNSENDABLE.search(value):
            shown = name.encode("ascii", "backslashreplace").decode()
            raise ValidationFailedError(
                f"The request header {shown!r} has characters that cannot be forwarded."
            )
        if len(_FIELD_NAMES_SEEN) < _FIELD_NAMES_KEPT:
            _FIELD_NAMES_SEEN.add(name)
    return headers


_FIELD_NAMES_SEEN: set[str] = set()  # well-formed names, as the clients spell them
_FIELD_NAMES_KEPT = 4096  # a client sending ever new names only stays on the slow path


class Proxy:
    """Sends requests to upstreams over a keep-alive pool, open while the server runs.

    A Resource (api_shared.context): ``start`` opens the pool, ``stop`` closes it.
    """

    pool: UpstreamPool  # from start() on

    def __init__(
        self,
        *,
        timeout_s: float,
        connect_timeout_s: float,
        trusted_proxies: tuple[IPNetwork, ...] = (),
        on_failure: FailureListener | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.trusted_proxies = trusted_proxies
        self.on_failure = on_failure or (lambda upstream, kind: None)

    async def start(self) -> None:
        self.pool = UpstreamPool(
            connect_timeout_s=self.connect_timeout_s,
            total_timeout_s=self.timeout_s,
            limit=LIMIT_PER_REPLICA,
        )

    async def stop(self) -> None:
        self.pool.close()
        await asyncio.sleep(0)  # let the transports close before the loop stops

    async def forward(self, request: Request, upstream: Upstream) -> HTTPResponse:
        """The upstream's response to ``request``, or the contract error for its failure."""
        fields = self._upstream_fields(request)  # a bad header is the client's failure
        request.ctx.upstream = upstream.name
        started = time.perf_counter()
        try:
            return await self._forward(request, upstream, fields)
        finally:
            request.ctx.upstream_duration_s = time.perf_counter() - started

    async def _forward(self, request: Request, upstream: Upstream, fields: bytes) -> HTTPResponse:
        retryable = request.method in IDEMPOTENT_METHODS
        candidates = upstream.candidates()
        attempts = candidates[:2] if retryable else candidates[:1]
        for attempt, target in enumerate(attempts, start=1):
            try:
                response = await self._send(request, target, fields)
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

    async def _send(self, request: Request, target: Target, fields: bytes) -> HTTPResponse:
        method = request.method
        origin = _origin_form(request.raw_url.decode("latin-1"))
        span = None
        if tracing.tracing_enabled():
            span = tracing.start_client_span(method, target.url + origin.partition("?")[0])
            if span is not None:
                fields = span.header_lines + fields
        try:
            response = await self.pool.send(
                target.url,
                method,
                origin.encode("latin-1"),
                fields,
                idempotent=method in IDEMPOTENT_METHODS,
            )
        except BaseException as error:
            if span is not None:
                span.end(error=error)
            if isinstance(error, ConnectFailedError):
                raise _ConnectError(error.cause) from error
            if isinstance(error, TimeoutError):
                raise UpstreamTimeoutError() from None
            if isinstance(error, UpstreamClosedError):
                # The connection broke after the request went out: it may have been acted on.
                raise _DisconnectedError(error) from error
            if isinstance(error, UpstreamProtocolError):
                raise BadGatewayError() from None
            raise
        if span is not None:
            span.end(status=response.status)
        return _client_response(response)

    def _upstream_fields(self, request: Request) -> bytes:
        """The header lines after Host, the blank line and the body, as sent upstream."""
        # Host is not forwarded but sent as X-Forwarded-Host, so it is checked with the rest.
        host = request.headers.get("host", "")
        end_to_end = _end_to_end(list(request.headers.items()))
        headers = _checked([*end_to_end, ("X-Forwarded-Host", host)])
        peer = peer_of(request)
        chain = forwarded_for_chain(peer, forwarded_for(request), self.trusted_proxies)
        client = getattr(request.ctx, "client_address", None) or peer  # resolved by dispatch
        lines = [f"{name}: {value}\r\n" for name, value in headers if not _replaced(name.lower())]
        lines += [
            f"X-Forwarded-For: {chain}\r\n",
            f"{CLIENT_ADDRESS_HEADER}: {client}\r\n",
            f"X-Forwarded-Proto: {request.scheme}\r\n",
            f"X-Forwarded-Host: {host}\r\n",
            f"{REQUEST_ID_HEADER}: {request_id_of(request)}\r\n",
        ]
        body = request.body
        if body or request.method in _BODY_METHODS:
            lines.append(f"Content-Length: {len(body)}\r\n")
        lines.append("\r\n")
        return "".join(lines).encode() + body


def _replaced(name: str) -> bool:
    """Whether the gateway sets this (lower-case) header itself, or never forwards it."""
    return name.startswith("x-forwarded-") or name in _TRACE_CONTEXT or name in _SET_HERE


# The request id, and the client's address: a client's own X-Real-IP would name any address.
_SET_HERE = frozenset({REQUEST_ID_HEADER.lower(), CLIENT_ADDRESS_HEADER.lower()})
LIMIT_PER_REPLICA = 256  # connections at once to one replica


def _client_response(response: UpstreamResponse) -> Response:
    """The client's response: the upstream's status, end-to-end headers and body as received."""
    # Decoded as aiohttp decoded them; Sanic encodes them back the same way (surrogateescape).
    fields = [
        (name.decode("utf-8", "surrogateescape"), value.decode("utf-8", "surrogateescape"))
        for name, value in response.headers
    ]
    return Response(response.body, status=response.status, headers=Header(_end_to_end(fields)))


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
