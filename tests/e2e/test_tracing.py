"""One trace per request across every process, exported over OTLP/HTTP to a real receiver.

A stack of its own, with ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at a receiver this test
runs; the receiver decodes what the services' OTLP exporters send. On PostgreSQL the traces
also hold the database's spans (asyncpg); SQLite has no instrumentation.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from api_testkit.actors import admin, customer
from api_testkit.catalog import book_ids
from api_testkit.databases import TEST_DATABASE_ENV
from api_testkit.stack import Stack, start_stack
from api_testkit.tracing import OtlpReceiver, ReceivedSpan

ASYNCPG_SCOPE = "opentelemetry.instrumentation.asyncpg"
SERVER_KIND = 2  # opentelemetry.proto.trace.v1.Span.SPAN_KIND_SERVER
EXPORT_WAIT_S = 30.0


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver().running() as running:
        yield running


@pytest.fixture(scope="module")
async def traced_stack(
    receiver: OtlpReceiver, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Stack]:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_TRACES_SAMPLER": "parentbased_always_on",
        "OTEL_BSP_SCHEDULE_DELAY": "100",  # export within 0.1 s, not the default 5 s
    }
    async with start_stack(tmp_path_factory.mktemp("traced"), env) as stack:
        yield stack


@pytest.fixture
async def gateway(traced_stack: Stack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=traced_stack.gateway_url, timeout=15.0) as client:
        yield client


async def trace_of(
    receiver: OtlpReceiver, root_name: str, services: set[str]
) -> list[ReceivedSpan]:
    """The spans of the one trace whose gateway span is ``root_name``, once every service's
    spans (and, on PostgreSQL, the database's) have arrived and every parent with them."""
    deadline = time.monotonic() + EXPORT_WAIT_S
    spans: list[ReceivedSpan] = []
    while time.monotonic() < deadline:
        received = receiver.received()
        roots = [s for s in received if s.service == "gateway" and s.name == root_name]
        if len(roots) == 1:
            spans = [s for s in received if s.trace_id == roots[0].trace_id]
            has_database = any(s.scope == ASYNCPG_SCOPE for s in spans)
            # A parent ends after its children, so it may be exported in a later batch.
            ids = {s.span_id for s in spans}
            closed = all(s.parent_span_id in ids for s in spans if s.parent_span_id)
            if (
                closed
                and {s.service for s in spans} >= services
                and (has_database or not _on_postgres())
            ):
                return spans
        await asyncio.sleep(0.1)
    pytest.fail(f"no complete trace for {root_name!r} in {EXPORT_WAIT_S}s: {spans}")


def _on_postgres() -> bool:
    return bool(os.environ.get(TEST_DATABASE_ENV))


def assert_one_tree(spans: list[ReceivedSpan]) -> ReceivedSpan:
    """Every span's parent is in the trace, but the gateway's root; returns the root."""
    ids = {span.span_id for span in spans}
    (root,) = [span for span in spans if not span.parent_span_id]
    assert root.service == "gateway"
    assert root.kind == SERVER_KIND
    assert all(span.parent_span_id in ids for span in spans if span is not root)
    assert len({span.trace_id for span in spans}) == 1
    return root


def access_line(log: Path, method: str, path: str) -> dict[str, object]:
    """The access line a service wrote for ``method path`` (its last, if several)."""
    lines: list[dict[str, object]] = [
        json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")
    ]
    return [
        line
        for line in lines
        if line.get("logger") == "api_shared.logging.access"
        and line["method"] == method
        and line["path"] == path
    ][-1]


async def test_one_order_is_one_trace_through_gateway_orders_users_books_and_the_database(
    gateway: httpx.AsyncClient, receiver: OtlpReceiver, traced_stack: Stack
) -> None:
    _, headers = await customer(gateway)
    book = (await book_ids(gateway))[0]

    created = await gateway.post(
        "/orders", json={"items": [{"bookId": book, "quantity": 1}]}, headers=headers
    )
    # A write: orders-service confirms its caller with users-service (GET /api/users/me).
    hops = {"gateway", "orders-service", "users-service", "books-graphql"}
    # Each process exports on its own schedule: wait for every hop, not only the first two.
    spans = await trace_of(receiver, "POST /orders{/path}", hops)

    assert created.status_code == 201, created.text
    root = assert_one_tree(spans)
    assert {span.service for span in spans} == hops
    server_spans = {s.service: s.name for s in spans if s.kind == SERVER_KIND}
    assert server_spans["orders-service"] == "POST /orders"
    assert server_spans["books-graphql"].startswith("POST /graphql")
    assert server_spans["users-service"] == "GET /api/users/me"
    if _on_postgres():
        database = {s.service for s in spans if s.scope == ASYNCPG_SCOPE}
        assert "orders-service" in database
    # The logs of every hop name the same request and the same trace.
    request_id = created.headers["x-request-id"]
    hops_logged = (("gateway", "/orders"), ("orders", "/orders"), ("users", "/api/users/me"),
                   ("books", "/graphql"))  # fmt: skip
    for name, path in hops_logged:
        method = "GET" if name == "users" else "POST"
        line = access_line(traced_stack.services[name].log_path, method, path)
        assert line["requestId"] == request_id, name
        assert line["traceId"] == root.trace_id, name


async def test_an_admins_look_at_a_users_orders_is_one_trace_through_users_service(
    gateway: httpx.AsyncClient, receiver: OtlpReceiver, traced_stack: Stack
) -> None:
    someone, _ = await customer(gateway)
    headers = await admin(gateway, traced_stack)

    listed = await gateway.get(f"/users/{someone['id']}/orders", headers=headers)
    spans = await trace_of(
        receiver, "GET /users/{user_id}/orders", {"gateway", "orders-service", "users-service"}
    )

    assert listed.status_code == 200, listed.text
    assert_one_tree(spans)
    assert {s.service for s in spans} == {"gateway", "orders-service", "users-service"}
    if _on_postgres():
        database = {s.service for s in spans if s.scope == ASYNCPG_SCOPE}
        assert database == {"orders-service", "users-service"}
