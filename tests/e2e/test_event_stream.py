"""The event stream (docs/api.md#event-stream) through the whole stack, read by an SSE client
that is not ours (httpx-sse): a customer subscribed through the gateway sees their order's
created → confirmed → shipped events in order and nothing of another customer's; a stream
dropped after the first event and resumed with Last-Event-ID yields the rest exactly once;
and 200 idle streams hold without the gateway's or webhooks-service's memory growing past
the bound docs/api.md#event-stream documents.

Each event goes the platform's whole way: orders-service's outbox, NATS, the dispatcher's
event log, webhooks-service's feed, the gateway's streaming proxy, the client.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx
import pytest
from httpx_sse import EventSource, ServerSentEvent, aconnect_sse

from api_testkit.actors import admin, customer
from api_testkit.orders import place
from api_testkit.stack import Stack

pytestmark = pytest.mark.needs(webhooks_service="1.2.0", gateway="1.4.0")

READ_TIMEOUT_S = 30.0  # a generous bound on a wait through the whole stack, not a figure
IDLE_STREAMS = 200
STREAMS_PER_CUSTOMER = 5  # EVENTS_STREAM_MAX_PER_CALLER's default
# docs/api.md#event-stream: what 200 idle streams may add to a process's resident memory.
MEMORY_BOUND_BYTES = 16 * 1024 * 1024


class Stream:
    """An open stream and the one iterator over its events (an httpx-sse event source is
    read once: every read goes on where the last one stopped)."""

    def __init__(self, source: EventSource) -> None:
        self.source = source
        self.events = source.aiter_sse()

    async def read_until(self, last_type: str) -> list[ServerSentEvent]:
        """The stream's next events up to and including the first of ``last_type``."""
        events: list[ServerSentEvent] = []
        async with asyncio.timeout(READ_TIMEOUT_S):
            async for sse in self.events:
                if not sse.data:
                    continue  # the retry line
                events.append(sse)
                if sse.event == last_type:
                    return events
        raise AssertionError(f"the stream ended before {last_type}: {[e.event for e in events]}")


@asynccontextmanager
async def _stream(
    gateway: httpx.AsyncClient, headers: dict[str, str], **extra: str
) -> AsyncIterator[Stream]:
    """A stream through the gateway, open (its headers received: its subscription taken)."""
    async with aconnect_sse(
        gateway,
        "GET",
        "/api/events/stream",
        headers={**headers, **extra},
        timeout=httpx.Timeout(READ_TIMEOUT_S),
    ) as source:
        assert source.response.status_code == 200, await source.response.aread()
        yield Stream(source)


async def _order(gateway: httpx.AsyncClient, headers: dict[str, str]) -> str:
    placed = await place(gateway, headers)
    assert placed.status_code == 201, placed.text
    order_id: str = placed.json()["data"]["id"]
    return order_id


async def _move(
    gateway: httpx.AsyncClient, order_id: str, headers: dict[str, str], *statuses: str
) -> None:
    for status in statuses:
        moved = await gateway.patch(f"/orders/{order_id}", json={"status": status}, headers=headers)
        assert moved.status_code == 200, moved.text


def _about(events: list[ServerSentEvent]) -> list[tuple[str, str]]:
    return [(sse.event, sse.json()["subject"]) for sse in events]


async def test_a_customer_sees_their_orders_events_in_order_and_nothing_of_anothers(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    admin_headers = await admin(gateway, stack)
    alice, alice_headers = await customer(gateway)
    _, bob_headers = await customer(gateway)
    async with _stream(gateway, alice_headers) as source:
        bobs = await _order(gateway, bob_headers)
        alices = await _order(gateway, alice_headers)
        await _move(gateway, bobs, admin_headers, "confirmed")
        await _move(gateway, alices, admin_headers, "confirmed", "shipped")
        events = await source.read_until("orders.order.shipped")
    assert _about(events) == [
        ("orders.order.created", alices),
        ("orders.order.confirmed", alices),
        ("orders.order.shipped", alices),
    ]
    assert {sse.json()["data"]["userId"] for sse in events} == {alice["id"]}
    assert [sse.id for sse in events] == [sse.json()["id"] for sse in events]


async def test_a_dropped_stream_resumed_with_last_event_id_yields_the_rest_exactly_once(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    admin_headers = await admin(gateway, stack)
    _, headers = await customer(gateway)
    async with _stream(gateway, headers) as source:
        order_id = await _order(gateway, headers)
        (created,) = await source.read_until("orders.order.created")
    # Dropped after the first event; the order moves on meanwhile.
    await _move(gateway, order_id, admin_headers, "confirmed", "shipped")
    async with _stream(gateway, headers, **{"Last-Event-ID": created.id}) as source:
        missed = await source.read_until("orders.order.shipped")
        await _move(gateway, order_id, admin_headers, "delivered")
        live = await source.read_until("orders.order.delivered")
    assert _about(missed + live) == [
        ("orders.order.confirmed", order_id),
        ("orders.order.shipped", order_id),
        ("orders.order.delivered", order_id),
    ]
    assert len({sse.id for sse in [created, *missed, *live]}) == 4  # none twice


async def _resident_bytes(client: httpx.AsyncClient, metrics_url: str) -> float:
    """A process's resident memory, as its /metrics reports it."""
    response = await client.get(metrics_url)
    assert response.status_code == 200, response.text
    found = re.search(r"^process_resident_memory_bytes (\S+)$", response.text, re.MULTILINE)
    assert found is not None, "no process_resident_memory_bytes in /metrics"
    return float(found.group(1))


@pytest.mark.processes  # reads each process's own /metrics
async def test_two_hundred_idle_streams_hold_within_the_memory_bound(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    metrics = {
        "gateway": f"{stack.services['gateway'].admin_url}/metrics",
        "webhooks": f"{stack.services['webhooks'].admin_url}/metrics",
    }
    customers = [await customer(gateway) for _ in range(IDLE_STREAMS // STREAMS_PER_CUSTOMER)]
    limits = httpx.Limits(max_connections=IDLE_STREAMS + 10)
    async with httpx.AsyncClient(
        base_url=stack.gateway_url, limits=limits, timeout=READ_TIMEOUT_S
    ) as streams_client:
        # Warm: one stream opened and closed first, so what is measured is the streams.
        async with _stream(streams_client, customers[0][1]):
            pass
        before = {name: await _resident_bytes(gateway, url) for name, url in metrics.items()}
        async with AsyncExitStack() as held:
            sources = [
                await held.enter_async_context(_stream(streams_client, headers))
                for _, headers in customers
                for _ in range(STREAMS_PER_CUSTOMER)
            ]
            await asyncio.sleep(1.0)  # the streams sit idle
            during = {name: await _resident_bytes(gateway, url) for name, url in metrics.items()}
            # Every stream held is a live one: an order of the first customer reaches all
            # five of theirs.
            order_id = await _order(gateway, customers[0][1])
            for source in sources[:STREAMS_PER_CUSTOMER]:
                (created,) = await source.read_until("orders.order.created")
                assert created.json()["subject"] == order_id
    grown: dict[str, Any] = {name: during[name] - before[name] for name in metrics}
    print(f"resident memory grown by {IDLE_STREAMS} idle streams: {grown}")
    for name, growth in grown.items():
        assert growth <= MEMORY_BOUND_BYTES, f"{name} grew {growth / 2**20:.1f} MiB"
