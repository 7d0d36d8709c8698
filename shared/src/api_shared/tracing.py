"""Distributed tracing with OpenTelemetry, configured by the standard ``OTEL_*`` variables.

Off unless an OTLP endpoint is set (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, or
``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/traces``): then the SDK is not even imported, no
middleware is installed and nothing is injected into outgoing calls, so tracing off costs
nothing but an ``if``. ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none`` turn it
off too.

When on, every process, the same way (``configure_tracing``, called by ``api_shared.runner``
before the app is built):

- exports over OTLP HTTP/protobuf, the specification's default (another
  ``OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL`` refuses to start rather than send nothing); the SDK
  reads the rest: ``OTEL_EXPORTER_OTLP_*`` headers, timeout, compression, certificates,
  ``OTEL_BSP_*`` batching, ``OTEL_TRACES_SAMPLER`` and ``OTEL_TRACES_SAMPLER_ARG``;
- names itself by ``OTEL_SERVICE_NAME`` (or ``service.name`` in ``OTEL_RESOURCE_ATTRIBUTES``),
  else by the service's own name;
- makes client spans for aiohttp (orders-service's calls to books-graphql and users-service,
  the gateway's own calls), which carry W3C ``traceparent`` to the callee; the gateway's
  proxy, which has a client of its own, makes them with ``start_client_span``;
- makes database spans for asyncpg (PostgreSQL; SQLite has no instrumentation).

And every app (``install_tracing``, from ``create_service_app``) opens one SERVER span per
request, named ``METHOD /route/template``, child of the caller's ``traceparent``; except at
the edge (the gateway), which starts a new trace for each request: a public client must not
choose the trace id, nor force its requests to be sampled. Probes and scrapes (``/health``,
``/ready``, ``/metrics``) are not traced, nor is what they do (the gateway's readiness
calls, the database ping): they would bury the traces of real requests.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, ClassVar, Literal

from opentelemetry import context, propagate, trace
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY
from opentelemetry.trace import SpanKind, Status, StatusCode
from pydantic import Field
from sanic import Request
from sanic.response import BaseHTTPResponse

from api_shared.metrics import route_template
from api_shared.settings import PlatformSettings
from api_shared.types import App

if TYPE_CHECKING:
    from yarl import URL  # aiohttp's; only the services that call out over HTTP have it

_enabled = False

UNTRACED_PATHS = frozenset({"/health", "/ready", "/metrics"})

Sampler = Literal[
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
]


class TracingSettings(PlatformSettings):
    """The standard variables this module reads itself (the SDK reads the others)."""

    family: ClassVar[str] = "Tracing and observability"

    endpoint: str | None = Field(
        default=None,
        validation_alias="OTEL_EXPORTER_OTLP_ENDPOINT",
        description="OTLP/HTTP collector base URL (`http://collector:4318`); traces go to "
        "`…/v1/traces`",
        json_schema_extra={"shown_default": "unset: tracing off"},
    )
    traces_endpoint: str | None = Field(
        default=None,
        validation_alias="OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        description="full traces URL, instead of the one above",
    )
    protocol: Literal["http/protobuf"] = Field(
        default="http/protobuf",
        validation_alias="OTEL_EXPORTER_OTLP_PROTOCOL",
        description="the only protocol supported; another value refuses to start",
    )
    traces_protocol: Literal["http/protobuf"] | None = Field(
        default=None,
        validation_alias="OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        description="the same, for traces only: `http/protobuf` or unset; another value "
        "refuses to start",
        json_schema_extra={"shown_default": "unset: `OTEL_EXPORTER_OTLP_PROTOCOL`"},
    )
    # Read again by the SDK; checked here so that a typo refuses to start instead of being
    # ignored (the SDK falls back to its default sampler with a warning).
    service_name: str | None = Field(
        default=None,
        validation_alias="OTEL_SERVICE_NAME",
        description="`service.name` of its spans",
        json_schema_extra={"shown_default": "the service's name"},
    )
    sampler: Sampler = Field(
        default="parentbased_always_on",
        validation_alias="OTEL_TRACES_SAMPLER",
        description="e.g. `parentbased_traceidratio` (with `OTEL_TRACES_SAMPLER_ARG=0.01`: 1 % "
        "of traces, decided at the gateway and followed by every service)",
    )
    sampler_arg: float | None = Field(
        default=None,
        ge=0,
        le=1,
        validation_alias="OTEL_TRACES_SAMPLER_ARG",
        description="the sampler's argument: `0.01` for 1 %",
    )
    sdk_disabled: bool = Field(
        default=False,
        validation_alias="OTEL_SDK_DISABLED",
        description="`true` turns tracing off despite an endpoint",
    )
    exporter: Literal["otlp", "none"] = Field(
        default="otlp",
        validation_alias="OTEL_TRACES_EXPORTER",
        description="`none` turns tracing off despite an endpoint",
    )

    @property
    def enabled(self) -> bool:
        has_endpoint = bool(self.traces_endpoint or self.endpoint)
        return has_endpoint and self.exporter == "otlp" and not self.sdk_disabled


def tracing_enabled() -> bool:
    """Whether this process exports traces (``configure_tracing`` found an endpoint)."""
    return _enabled


def configure_tracing(service: str, settings: TracingSettings | None = None) -> bool:
    """Set up the SDK, exporter and instrumentations for this process; whether tracing is on."""
    global _enabled
    settings = settings or TracingSettings()
    if not settings.enabled or _enabled:
        return _enabled
    # Imported here: a process without tracing never loads the SDK.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: service}))
    provider = TracerProvider(resource=resource)  # the sampler of OTEL_TRACES_SAMPLER
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    if importlib.util.find_spec("aiohttp") is not None:  # the gateway's and orders' client
        from opentelemetry.instrumentation.aiohttp_client import AioHttpClientInstrumentor

        AioHttpClientInstrumentor().instrument(url_filter=_without_query)
    AsyncPGInstrumentor().instrument()  # type: ignore[no-untyped-call]  # untyped __init__
    _enabled = True
    return True


def _without_query(url: URL) -> str:
    # A query string may carry what a client should not have put there (tokens, emails).
    return str(url.with_query(None).with_fragment(None))


class ClientSpan:
    """A CLIENT span around one outgoing HTTP request, and the header lines that carry it."""

    def __init__(self, span: trace.Span, header_lines: bytes) -> None:
        self.span = span
        self.header_lines = header_lines  # traceparent (and tracestate), CRLF-terminated

    def end(self, *, status: int | None = None, error: BaseException | None = None) -> None:
        if status is not None:
            self.span.set_attribute("http.response.status_code", status)
        if error is not None:
            self.span.set_attribute("error.type", type(error).__qualname__)
            self.span.set_status(Status(StatusCode.ERROR, type(error).__qualname__))
        elif status is not None and status >= 500:
            self.span.set_status(Status(StatusCode.ERROR))
        self.span.end()


def start_client_span(method: str, url: str) -> ClientSpan | None:
    """A CLIENT span for ``method url`` (no query string), child of the current span, as the
    aiohttp instrumentation makes; None when tracing is off or suppressed (probes)."""
    if not _enabled or context.get_value(_SUPPRESS_INSTRUMENTATION_KEY):
        return None
    span = trace.get_tracer(__name__).start_span(
        method,
        kind=SpanKind.CLIENT,
        attributes={"http.request.method": method, "url.full": url},
    )
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=trace.set_span_in_context(span))
    lines = "".join(f"{name}: {value}\r\n" for name, value in carrier.items())
    return ClientSpan(span, lines.encode())


def current_trace_ids() -> tuple[str, str] | None:
    """The trace and span ids (hex) of the span being handled, for log lines; None if none."""
    if not _enabled:
        return None
    span_context = trace.get_current_span().get_span_context()
    if not span_context.is_valid:
        return None
    return format(span_context.trace_id, "032x"), format(span_context.span_id, "016x")


def install_tracing(
    app: App, *, edge: bool = False, tracer_provider: trace.TracerProvider | None = None
) -> None:
    """One SERVER span per request (when tracing is on, or a provider is given: tests).

    ``edge``: the public entry point, which starts a new trace instead of continuing one.
    """
    if tracer_provider is None and not _enabled:
        return
    tracer = trace.get_tracer(__name__, tracer_provider=tracer_provider)

    async def start_span(request: Request) -> None:
        if request.path in UNTRACED_PATHS:
            # The key every instrumentation checks (aiohttp-client and asyncpg included).
            silent = context.set_value(_SUPPRESS_INSTRUMENTATION_KEY, True, context.Context())
            request.ctx.trace_token = context.attach(silent)
            return
        parent = context.Context() if edge else propagate.extract(request.headers)
        span = tracer.start_span(
            request.method,  # renamed once routing has found the template
            context=parent,
            kind=SpanKind.SERVER,
            attributes={
                "http.request.method": request.method,
                "url.path": request.path,
                "url.scheme": request.scheme,
            },
        )
        request.ctx.trace_span = span
        request.ctx.trace_token = context.attach(trace.set_span_in_context(span, parent))

    async def end_span(request: Request, response: BaseHTTPResponse) -> None:
        token = getattr(request.ctx, "trace_token", None)
        if token is None:
            return
        request.ctx.trace_token = None
        span = getattr(request.ctx, "trace_span", None)
        if span is not None:
            route = route_template(request)
            span.update_name(f"{request.method} {route}")
            span.set_attribute("http.route", route)
            span.set_attribute("http.response.status_code", response.status)
            if response.status >= 500:
                span.set_status(Status(StatusCode.ERROR))
            span.end()
            request.ctx.trace_span = None
        context.detach(token)

    # First in, last out: the span covers every other middleware, the access line included.
    app.register_middleware(start_span, "request", priority=1001)
    app.register_middleware(end_span, "response", priority=1001)
