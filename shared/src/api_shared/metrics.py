"""Prometheus metrics per process: requests by route template, latency; ``GET /metrics``.

Every registry also has the process (CPU, memory, open files), garbage-collector and
platform (Python version) collectors. An app may add labels read from ``request.ctx`` (the
gateway: ``upstream``), and ``Reading``s: values a part of the service already keeps (a
pool's size, slots in use), read when Prometheus scrapes instead of being copied on every
change (a ``Readings`` collector; a context's resources bring theirs, api_shared.context).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from prometheus_client import (
    CollectorRegistry,
    Counter,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from sanic import Request
from sanic.response import BaseHTTPResponse, HTTPResponse

from api_shared.types import App

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def route_template(request: Request) -> str:
    """The matched route's pattern (``/api/users/<user_id>``), never the raw path (unbounded).

    A handler serving many paths names the template it served in ``request.ctx.route_template``
    (the gateway's proxy: the template of its own route table).
    """
    template: str | None = getattr(request.ctx, "route_template", None)
    if template is not None:
        return template
    route = request.route
    return f"/{route.path}" if route is not None else "unmatched"


def labelled(metric: MetricWrapperBase) -> Callable[..., Any]:
    """``metric.labels`` for the hot path: each child kept once made.

    ``labels()`` checks its arguments and takes a lock on every call (~2 µs per metric per
    request); once the child of some label values exists, a dict lookup finds it. This holds
    what the metric holds already (a child per label values), so it grows no further; a
    child the metric drops (``remove``, ``clear``: nothing here calls them) would stay.
    """
    children: dict[tuple[str, ...], Any] = {}

    def child(*values: str) -> Any:
        found = children.get(values)
        if found is None:
            found = children[values] = metric.labels(*values)
        return found

    return child


ResponseHook = Callable[[Request, BaseHTTPResponse], None]
"""A step of the service frame's response pass (api_shared.service_app)."""


def new_registry() -> CollectorRegistry:
    """An app's registry, with the process, garbage-collector and platform collectors.

    One registry per app: tests build many apps in one process, the default one is global.
    """
    registry = CollectorRegistry()
    # The default registry's collectors, on this one (what they report is per process).
    ProcessCollector(registry=registry)
    GCCollector(registry=registry)
    PlatformCollector(registry=registry)
    return registry


def install_metrics(
    app: App, registry: CollectorRegistry, extra_labels: Sequence[str] = ()
) -> ResponseHook:
    """Serve ``registry`` (the app's frame's) at ``/metrics``; return the step that counts
    and times each response (api_shared.service_app runs it).

    ``extra_labels`` are read from ``request.ctx`` (empty when a request has none).
    """
    extra = tuple(extra_labels)
    requests = Counter(
        "http_requests_total",
        "HTTP requests by route template, method and status.",
        ["route", "method", "status", *extra],
        registry=registry,
    )
    latency = Histogram(
        "http_request_duration_seconds",
        "HTTP request latency by route template and method.",
        ["route", "method", *extra],
        buckets=LATENCY_BUCKETS,
        registry=registry,
    )

    counted, timed = labelled(requests), labelled(latency)

    def observe(request: Request, response: BaseHTTPResponse) -> None:
        route = route_template(request)
        values = [getattr(request.ctx, label, None) or "" for label in extra]
        counted(route, request.method, str(response.status), *values).inc()
        # The clock is started by the access log (api_shared.logging), installed alongside.
        started = getattr(request.ctx, "started_at", None)
        if started is not None:
            timed(route, request.method, *values).observe(time.perf_counter() - started)

    @app.get("/metrics", name="metrics")
    async def get_metrics(request: Request) -> HTTPResponse:
        return HTTPResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)

    return observe


@dataclass(frozen=True)
class Reading:
    """One metric whose value ``read`` returns at scrape time (None: not known right now).

    A ``counter``'s name is given without ``_total`` (Prometheus adds it).
    """

    name: str
    documentation: str
    read: Callable[[], float | None]
    kind: Literal["gauge", "counter"] = "gauge"

    def family(self, with_value: bool) -> Metric:
        value = self.read() if with_value else None
        family_class = GaugeMetricFamily if self.kind == "gauge" else CounterMetricFamily
        family = family_class(self.name, self.documentation)
        if value is not None:
            family.add_metric([], value)
        return family


class Readings:
    """A collector of ``Reading``s: every family always listed, a sample when its value is known."""

    def __init__(self, readings: Sequence[Reading]) -> None:
        self._readings = tuple(readings)

    def describe(self) -> Iterator[Metric]:
        # Lets the registry refuse a name registered twice, without reading any value.
        for reading in self._readings:
            yield reading.family(with_value=False)

    def collect(self) -> Iterator[Metric]:
        for reading in self._readings:
            yield reading.family(with_value=True)


def register_readings(registry: CollectorRegistry, readings: Sequence[Reading]) -> None:
    """Export ``readings`` on ``registry``."""
    registry.register(Readings(readings))
