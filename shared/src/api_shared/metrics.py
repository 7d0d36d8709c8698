"""Prometheus metrics per process: requests by route template, latency; ``GET /metrics``."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from sanic import Request
from sanic.response import BaseHTTPResponse, HTTPResponse

from api_shared.types import App

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def route_template(request: Request) -> str:
    """The matched route's pattern (``/api/users/<user_id>``), never the raw path (unbounded)."""
    route = request.route
    return f"/{route.path}" if route is not None else "unmatched"


def install_metrics(app: App) -> CollectorRegistry:
    """Count and time every request; serve them at ``/metrics``. Returns the app's registry."""
    # One registry per app: tests build many apps in one process, the default one is global.
    registry = CollectorRegistry()
    app.ctx.metrics_registry = registry
    requests = Counter(
        "http_requests_total",
        "HTTP requests by route template, method and status.",
        ["route", "method", "status"],
        registry=registry,
    )
    latency = Histogram(
        "http_request_duration_seconds",
        "HTTP request latency by route template and method.",
        ["route", "method"],
        buckets=LATENCY_BUCKETS,
        registry=registry,
    )

    async def observe(request: Request, response: BaseHTTPResponse) -> None:
        route = route_template(request)
        requests.labels(route, request.method, str(response.status)).inc()
        # The clock is started by the access log (api_shared.logging), installed alongside.
        started = getattr(request.ctx, "started_at", None)
        if started is not None:
            latency.labels(route, request.method).observe(time.perf_counter() - started)

    @app.get("/metrics", name="metrics")
    async def get_metrics(request: Request) -> HTTPResponse:
        return HTTPResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)

    app.register_middleware(observe, "response", priority=998)
    return registry
