"""Forwarding a request to an upstream, and mapping its failures to the contract.

Requests go over the gateway's own keep-alive client (``pool``), faster per request than
aiohttp's; what crosses, headers and body, is ``message``'s.

- connection refused / DNS / reset before an answer → 503 UNAVAILABLE (+ Retry-After);
- no answer within the timeout → 504 UPSTREAM_TIMEOUT;
- an answer that is not HTTP → 502 BAD_GATEWAY;
- the upstream's own responses, errors included, pass through unchanged.
Idempotent methods are retried once, on the next replica, when the connection failed, or
broke before an answer: a replica that is shutting down closes its idle keep-alive connections,
and a request already on its way over one of them may be cut (RFC 9112 §9.3.1; retrying an
idempotent request is allowed by RFC 9110 §9.2.2).
The request's ``ctx`` records the upstream and the time spent on it (metrics, access line).
"""

from __future__ import annotations

import asyncio
import time

from sanic import Request
from sanic.response import HTTPResponse

from api_shared import tracing
from api_shared.errors import BadGatewayError, UpstreamTimeoutError
from gateway.upstream.connection import UpstreamClosedError, UpstreamProtocolError
from gateway.upstream.failover import (
    DisconnectedError,
    FailureListener,
    NotConnectedError,
    first_answer,
)
from gateway.upstream.message import client_response, origin_form, upstream_fields
from gateway.upstream.pool import ConnectFailedError, UpstreamPool
from gateway.upstream.replicas import Upstream

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
LIMIT_PER_REPLICA = 256  # connections at once to one replica


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
        on_failure: FailureListener | None = None,
    ) -> None:
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
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

    async def forward(
        self, request: Request, upstream: Upstream, client_address: str, forwarded_for: str
    ) -> HTTPResponse:
        """The upstream's response to ``request``, or the contract error for its failure.

        ``client_address`` and ``forwarded_for``: the client as the gateway resolved it, and
        the ``X-Forwarded-For`` chain to send (gateway.clientip).
        """
        # A bad header is the client's failure, before any upstream is asked.
        fields = upstream_fields(request, client_address, forwarded_for)
        origin = origin_form(request.raw_url.decode("latin-1"))
        request.ctx.upstream = upstream.name
        started = time.perf_counter()
        try:
            return await self._forward(request.method, origin, fields, upstream)
        finally:
            request.ctx.upstream_duration_s = time.perf_counter() - started

    async def _forward(
        self, method: str, origin: str, fields: bytes, upstream: Upstream
    ) -> HTTPResponse:
        """The first answer of at most two replicas (one, unless ``method`` is idempotent)."""
        return await first_answer(
            upstream,
            lambda target: self._send(method, target.url, origin, fields),
            idempotent=method in IDEMPOTENT_METHODS,
            on_failure=self.on_failure,
        )

    async def _send(self, method: str, base_url: str, origin: str, fields: bytes) -> HTTPResponse:
        """One replica's answer, or the contract error (or retryable failure) it came to."""
        span = None
        if tracing.tracing_enabled():
            span = tracing.start_client_span(method, base_url + origin.partition("?")[0])
            if span is not None:
                fields = span.header_lines + fields
        try:
            response = await self.pool.send(
                base_url,
                method,
                origin.encode("latin-1"),
                fields,
                idempotent=method in IDEMPOTENT_METHODS,
            )
        except BaseException as error:
            if span is not None:
                span.end(error=error)
            if isinstance(error, ConnectFailedError):
                raise NotConnectedError(error.cause) from error
            if isinstance(error, TimeoutError):
                raise UpstreamTimeoutError() from None
            if isinstance(error, UpstreamClosedError):
                # The connection broke after the request went out: it may have been acted on.
                raise DisconnectedError(error) from error
            if isinstance(error, UpstreamProtocolError):
                raise BadGatewayError() from None
            raise
        if span is not None:
            span.end(status=response.status)
        return client_response(response)
