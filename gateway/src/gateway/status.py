"""The upstreams' state, for operators: ``/status`` on the admin port and a gauge per upstream.

The gateway's own ``/ready`` does not depend on any upstream: one service's database blip
would otherwise turn every gateway pod NotReady, and the Service would stop routing logins and
GraphQL too, instead of the gateway answering that service's routes with 503 + Retry-After.
Nor does it depend on Redis: the rate limiter falls back to per-process buckets when Redis
fails. Both stay visible here: ``/status`` probes every replica of every upstream (and Redis,
when configured), and ``gateway_upstream_ready`` is refreshed every ``PROBE_INTERVAL_S``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping

import aiohttp
from prometheus_client import Gauge

from api_shared.http import HttpSession
from gateway.upstream.replicas import Target, Upstream

READY_TIMEOUT = aiohttp.ClientTimeout(total=2.0)
PROBE_INTERVAL_S = 10.0
OK = "ok"

StoreCheck = Callable[[], Awaitable[object]]
"""Raises when the rate-limit store does not answer (Redis ``PING``)."""


async def replica_state(session: aiohttp.ClientSession, target: Target) -> str:
    """``ok`` when the replica answers ``/ready`` with 200, else what went wrong."""
    try:
        async with session.get(f"{target.url}/ready", timeout=READY_TIMEOUT) as response:
            return OK if response.status == 200 else f"unavailable: {response.status}"
    except (aiohttp.ClientError, TimeoutError) as error:
        return f"unavailable: {type(error).__name__}"


class UpstreamStatus:
    """Probes the upstreams (an upstream is ready when one of its replicas is) over the
    gateway's own HTTP session."""

    def __init__(
        self,
        http: HttpSession,
        upstreams: Mapping[str, Upstream],
        gauge: Gauge,
        store_check: StoreCheck | None = None,
    ) -> None:
        self.http = http
        self.upstreams = upstreams
        self.gauge = gauge  # gateway_upstream_ready{upstream}
        self.store_check = store_check

    async def report(self) -> dict[str, object]:
        """Every upstream's replicas and readiness; the gauge is updated on the way."""
        session = self.http.session
        names = list(self.upstreams)
        states = await asyncio.gather(
            *(self._upstream(session, self.upstreams[name]) for name in names)
        )
        upstreams = dict(zip(names, states, strict=True))
        body: dict[str, object] = {
            "status": OK if all(u["status"] == OK for u in upstreams.values()) else "degraded",
            "upstreams": upstreams,
        }
        if self.store_check is not None:
            body["rateLimitStore"] = await self._store()
        return body

    async def _upstream(
        self, session: aiohttp.ClientSession, upstream: Upstream
    ) -> dict[str, object]:
        urls = [target.url for target in upstream.targets]
        states = await asyncio.gather(*(replica_state(session, t) for t in upstream.targets))
        ready = OK in states
        self.gauge.labels(upstream.name).set(1 if ready else 0)
        return {
            "status": OK if ready else "unavailable",
            "replicas": dict(zip(urls, states, strict=True)),
        }

    async def _store(self) -> str:
        assert self.store_check is not None
        try:
            await asyncio.wait_for(self.store_check(), READY_TIMEOUT.total)
        except Exception as error:  # any failure: the limiter is on its fallback buckets
            return f"unavailable: {type(error).__name__} (limits applied per process)"
        return OK
