"""The caller's event history (docs/api.md#event-log) through the whole stack: two customers
each place an order through the gateway; orders-service publishes its events to the
Procfile's nats-server, the dispatcher keeps each in webhooks-service's event log, and each
customer reads their own order's events at `GET /api/events` and nothing of the other's (an
id of the other's is 404); an admin sees both, and filters by type and subject.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from api_testkit.actors import admin, customer
from api_testkit.events import eventually
from api_testkit.orders import place
from api_testkit.stack import Stack

pytestmark = pytest.mark.needs(webhooks_service="1.2.0", gateway="1.3.0")

CREATED = "orders.order.created"


async def _order(gateway: httpx.AsyncClient, headers: dict[str, str]) -> str:
    placed = await place(gateway, headers)
    assert placed.status_code == 201, placed.text
    order_id: str = placed.json()["data"]["id"]
    return order_id


async def _events(
    gateway: httpx.AsyncClient, headers: dict[str, str], **params: str
) -> list[dict[str, Any]]:
    response = await gateway.get("/api/events", params={"limit": "100", **params}, headers=headers)
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()["data"]
    return events


async def _created_event(
    gateway: httpx.AsyncClient, headers: dict[str, str], order_id: str
) -> dict[str, Any]:
    """The order's creation event in the caller's history, once the dispatcher kept it (events
    flow through NATS asynchronously)."""
    found: list[dict[str, Any]] = []

    async def arrived() -> bool:
        found[:] = [
            e
            for e in await _events(gateway, headers)
            if (e["subject"], e["type"]) == (order_id, CREATED)
        ]
        return bool(found)

    await eventually(arrived, f"the {CREATED} event of order {order_id} in the event log")
    (event,) = found
    return event


async def test_each_customer_sees_their_own_orders_events_and_an_admin_both(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    alice, alice_headers = await customer(gateway)
    bob, bob_headers = await customer(gateway)
    alices_order = await _order(gateway, alice_headers)
    bobs_order = await _order(gateway, bob_headers)

    alices_event = await _created_event(gateway, alice_headers, alices_order)
    bobs_event = await _created_event(gateway, bob_headers, bobs_order)
    assert alices_event["data"]["userId"] == alice["id"]
    assert bobs_event["data"]["userId"] == bob["id"]
    assert (alices_event["specversion"], alices_event["source"]) == ("1.0", "/orders-service")
    assert alices_event["sequence"] == 1
    # Only their own: nothing about the other's order, in the list or by id.
    assert bobs_order not in {e["subject"] for e in await _events(gateway, alice_headers)}
    assert alices_order not in {e["subject"] for e in await _events(gateway, bob_headers)}
    for headers, other in ((alice_headers, bobs_event), (bob_headers, alices_event)):
        hidden = await gateway.get(f"/api/events/{other['id']}", headers=headers)
        assert hidden.status_code == 404, hidden.text
        assert hidden.json()["error"]["code"] == "NOT_FOUND"
    own = await gateway.get(f"/api/events/{alices_event['id']}", headers=alice_headers)
    assert own.status_code == 200, own.text
    assert own.json()["data"] == alices_event

    admin_headers = await admin(gateway, stack)
    for order_id, event in ((alices_order, alices_event), (bobs_order, bobs_event)):
        filtered = await _events(gateway, admin_headers, type=CREATED, subject=order_id)
        assert filtered == [event]
        shown = await gateway.get(f"/api/events/{event['id']}", headers=admin_headers)
        assert shown.status_code == 200, shown.text
    everyone = {e["id"] for e in await _events(gateway, admin_headers, type=CREATED)}
    assert {alices_event["id"], bobs_event["id"]} <= everyone


async def test_the_event_log_needs_a_token_at_the_gateway(gateway: httpx.AsyncClient) -> None:
    for path in ("/api/events", "/api/events/anything"):
        refused = await gateway.get(path)
        assert refused.status_code == 401, refused.text
