"""The gateway's own metrics, beside the request metrics every service has (api_shared.metrics).

- ``gateway_upstream_duration_seconds{upstream, route}``: how long each proxied request spent
  on its upstream (retries included, failures too), by upstream and route template;
- ``gateway_upstream_errors_total{upstream, kind}``: upstream failures (the proxy's);
- ``gateway_rate_limited_total{policy}``: requests refused by a rate limit (the edge pipeline's);
- ``gateway_rate_limiter_errors_total``: Redis failures of the rate limiter;
- ``gateway_upstream_ready{upstream}``: 1 while an upstream answers ``/ready`` (gateway.status);
- ``gateway_open_streams``: streamed answers open now (gateway.upstream.stream).

``wire`` builds them, unregistered, for the parts that count, and lists them among the
context's resources: ``install_context`` registers them on the app's registry, wherever that
registry is served. ``install_gateway_metrics`` observes each request's upstream time.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.registry import Collector
from sanic import Request
from sanic.response import BaseHTTPResponse

from api_shared.context import Inert
from api_shared.metrics import LATENCY_BUCKETS, labelled, route_template
from api_shared.types import App


class GatewayMetrics(Inert):
    """The gateway's counters, gauges and histogram, and the events that move them (a
    ``Measured`` resource of the context)."""

    def __init__(self) -> None:
        # registry=None: registered on the app's registry by install_context.
        self.upstream_latency = Histogram(
            "gateway_upstream_duration_seconds",
            "Time spent on the upstream per proxied request, by upstream and route template.",
            ["upstream", "route"],
            buckets=LATENCY_BUCKETS,
            registry=None,
        )
        self.upstream_errors = Counter(
            "gateway_upstream_errors_total",
            "Upstream failures by upstream and kind.",
            ["upstream", "kind"],
            registry=None,
        )
        self.rate_limited = Counter(
            "gateway_rate_limited_total",
            "Requests refused by a rate limit.",
            ["policy"],
            registry=None,
        )
        self.limiter_errors = Counter(
            "gateway_rate_limiter_errors_total",
            "Rate-limiter Redis failures (limits then applied with this process's own buckets).",
            registry=None,
        )
        self.upstream_ready = Gauge(
            "gateway_upstream_ready",
            "1 when at least one replica of the upstream answers /ready with 200, else 0.",
            ["upstream"],
            registry=None,
        )
        self.open_streams = Gauge(
            "gateway_open_streams",
            "Streamed answers (Server-Sent Events) this process holds open now.",
            registry=None,
        )

    def collectors(self) -> tuple[Collector, ...]:
        return (
            self.upstream_latency,
            self.upstream_errors,
            self.rate_limited,
            self.limiter_errors,
            self.upstream_ready,
            self.open_streams,
        )

    def upstream_failed(self, upstream: str, kind: str) -> None:
        self.upstream_errors.labels(upstream, kind).inc()

    def refused_by(self, policy: str) -> None:
        self.rate_limited.labels(policy).inc()

    def limiter_failed(self) -> None:
        self.limiter_errors.inc()

    def streams_open(self, count: int) -> None:
        self.open_streams.set(count)


def install_gateway_metrics(app: App, metrics: GatewayMetrics) -> None:
    """Observe the upstream time of each request in ``metrics`` (the proxy records that time
    on ``request.ctx``)."""
    latency = labelled(metrics.upstream_latency)

    def observe(request: Request, response: BaseHTTPResponse) -> None:
        seconds: float | None = getattr(request.ctx, "upstream_duration_s", None)
        if seconds is not None:
            latency(request.ctx.upstream, route_template(request)).observe(seconds)

    app.register_middleware(observe, "response", priority=998)
