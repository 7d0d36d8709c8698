"""Request and trace ids in every log line, server spans by route template, process metrics."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
import orjson
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import ValidationError
from sanic import Request, Sanic
from sanic.response import HTTPResponse

from api_shared import tracing
from api_shared.logging import JsonFormatter
from api_shared.representation import json_response
from api_shared.service_app import create_service_app
from api_shared.settings import ServiceSettings
from api_shared.tracing import TracingSettings, install_tracing
from api_testkit.in_process import serve_in_process

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"

handler_logger = logging.getLogger("tests.observability")


@contextmanager
def log_lines() -> Iterator[list[dict[str, Any]]]:
    """Every log line written meanwhile, as the JSON the services write."""
    lines: list[dict[str, Any]] = []
    formatter = JsonFormatter("test")

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(orjson.loads(formatter.format(record)))

    handler = Collect(logging.INFO)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


@asynccontextmanager
async def traced_service(
    spans: InMemorySpanExporter, *, edge: bool = False
) -> AsyncIterator[httpx.AsyncClient]:
    Sanic.test_mode = True
    app = create_service_app("traced", ServiceSettings(environment="development"))
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    install_tracing(app, edge=edge, tracer_provider=provider)

    @app.get("/things/<thing_id>", name="thing")
    async def get_thing(request: Request, thing_id: str) -> HTTPResponse:
        handler_logger.info("looking the thing up", extra={"thing": thing_id})
        return json_response({"id": thing_id})

    @app.get("/broken", name="broken")
    async def broken(request: Request) -> HTTPResponse:
        raise RuntimeError("a bug")

    async with serve_in_process(app) as url, httpx.AsyncClient(base_url=url) as client:
        yield client


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    # As configure_tracing leaves a process whose OTLP endpoint is set (log lines read it).
    monkeypatch.setattr(tracing, "_enabled", True)
    return InMemorySpanExporter()


async def test_every_line_logged_for_a_request_carries_its_request_and_trace_ids(
    spans: InMemorySpanExporter,
) -> None:
    async with traced_service(spans) as client:
        with log_lines() as lines:
            response = await client.get(
                "/things/t-1", headers={"X-Request-ID": "req-42", "traceparent": TRACEPARENT}
            )

    assert response.status_code == 200
    (server,) = spans.get_finished_spans()
    span_id = format(server.context.span_id, "016x")
    handler_line = next(line for line in lines if line["message"] == "looking the thing up")
    access_line = next(line for line in lines if line["logger"] == "api_shared.logging.access")
    for line in (handler_line, access_line):
        assert line["requestId"] == "req-42"
        assert line["traceId"] == CALLER_TRACE
        assert line["spanId"] == span_id


async def test_a_server_span_is_named_by_route_template_and_continues_the_callers_trace(
    spans: InMemorySpanExporter,
) -> None:
    async with traced_service(spans) as client:
        await client.get("/things/t-1", headers={"traceparent": TRACEPARENT})
        await client.get("/broken")

    thing, broken = spans.get_finished_spans()
    assert thing.name == "GET /things/<thing_id:str>"
    assert thing.kind is SpanKind.SERVER
    assert format(thing.context.trace_id, "032x") == CALLER_TRACE
    assert thing.parent is not None
    assert format(thing.parent.span_id, "016x") == CALLER_SPAN
    assert thing.attributes is not None
    assert thing.attributes["http.route"] == "/things/<thing_id:str>"
    assert thing.attributes["http.response.status_code"] == 200
    assert broken.status.status_code is StatusCode.ERROR
    assert broken.parent is None  # no traceparent: a new trace


async def test_probes_and_scrapes_are_not_traced(spans: InMemorySpanExporter) -> None:
    async with traced_service(spans) as client:
        with log_lines() as lines:
            for path in ("/health", "/ready", "/metrics"):
                await client.get(path, headers={"traceparent": TRACEPARENT})

    assert spans.get_finished_spans() == ()
    assert all("traceId" not in line for line in lines)


async def test_the_edge_starts_a_new_trace_whatever_traceparent_a_client_sends(
    spans: InMemorySpanExporter,
) -> None:
    async with traced_service(spans, edge=True) as client:
        await client.get("/things/t-1", headers={"traceparent": TRACEPARENT})

    (server,) = spans.get_finished_spans()
    assert server.parent is None
    assert format(server.context.trace_id, "032x") != CALLER_TRACE


async def test_lines_logged_outside_any_request_carry_no_request_id() -> None:
    Sanic.test_mode = True
    app = create_service_app("untraced", ServiceSettings(environment="development"))
    async with serve_in_process(app) as url, httpx.AsyncClient(base_url=url) as client:
        await client.get("/health", headers={"X-Request-ID": "req-1"})
        with log_lines() as lines:
            handler_logger.info("between requests")

    assert "requestId" not in lines[0]
    assert "traceId" not in lines[0]  # tracing is off here


async def test_every_registry_reports_the_process_and_its_garbage_collector() -> None:
    Sanic.test_mode = True
    app = create_service_app("metered", ServiceSettings(environment="development"))
    async with serve_in_process(app) as url, httpx.AsyncClient(base_url=url) as client:
        body = (await client.get("/metrics")).text

    assert "process_resident_memory_bytes" in body
    assert "python_gc_collections_total" in body


@pytest.mark.parametrize(
    ("env", "enabled"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
    ],
)
def test_tracing_is_on_only_with_an_otlp_endpoint(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], enabled: bool
) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    assert TracingSettings().enabled is enabled


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_TRACES_SAMPLER", "parentbased_traceratio"),
        ("OTEL_TRACES_SAMPLER_ARG", "5"),
    ],
)
def test_an_unsupported_or_misspelt_tracing_setting_refuses_to_start(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    monkeypatch.setenv(variable, value)

    with pytest.raises(ValidationError, match=variable):
        TracingSettings()
