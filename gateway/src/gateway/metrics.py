"""The gateway's own metrics, beside the request metrics every service has (api_shared.metrics).

- ``gateway_upstream_duration_seconds{upstream, route}``: how long each proxied request spent
  on its upstream (retries included, failures too), by upstream and route template;
- ``gateway_upstream_errors_total{upstream, kind}``, ``gateway_rate_limited_total{policy}``
  and ``gateway_rate_limiter_errors_total``: registered by the app where it wires their
  sources.

They are defined on the app's registry, wherever that registry is served.
"""

from __future__ import annotations

from prometheus_client import Histogram
from sanic import Request
from sanic.response import BaseHTTPResponse

from api_shared.metrics import LATENCY_BUCKETS, route_template
from api_shared.types import App


def install_upstream_latency(app: App) -> Histogram:
    """Observe the upstream time the proxy recorded on each request (``request.ctx``)."""
    latency = Histogram(
        "gateway_upstream_duration_seconds",
        "Time spent on the upstream per proxied request, by upstream and route template.",
        ["upstream", "route"],
        buckets=LATENCY_BUCKETS,
        registry=app.ctx.metrics_registry,
    )

    async def observe(request: Request, response: BaseHTTPResponse) -> None:
        seconds: float | None = getattr(request.ctx, "upstream_duration_s", None)
        if seconds is not None:
            latency.labels(request.ctx.upstream, route_template(request)).observe(seconds)

    app.register_middleware(observe, "response", priority=998)
    return latency
