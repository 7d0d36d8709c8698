"""Customers' own webhooks (docs/api.md#webhooks) through the whole stack: two customers each
register an endpoint through the gateway, each on a receiver of their own, and an admin one
for every user's events; each customer's orders become orders-service's events on the
Procfile's nats-server, and the Procfile's dispatcher POSTs each customer only their own,
signed with their endpoint's secret (checked with the Standard Webhooks reference library),
and the admin's endpoint both. Neither customer sees the other's endpoint.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

from api_testkit.actors import admin, customer
from api_testkit.events import eventually
from api_testkit.orders import place
from api_testkit.stack import Stack
from api_testkit.webhooks import WebhookReceiver, webhook_receiver

pytestmark = [
    pytest.mark.processes,  # the receivers listen on this machine's loopback
    pytest.mark.needs(
        webhooks_service="1.2.0", users_service="1.3.0", gateway="1.3.0", orders_service="1.2.0"
    ),
]


async def _register(
    gateway: httpx.AsyncClient, headers: dict[str, str], url: str
) -> dict[str, Any]:
    created = await gateway.post(
        "/api/webhooks", json={"url": url, "eventTypes": ["orders.order.*"]}, headers=headers
    )
    assert created.status_code == 201, created.text
    endpoint: dict[str, Any] = created.json()["data"]
    return endpoint


def _verified(receiver: WebhookReceiver, endpoint: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The events the receiver got for ``endpoint``, verified with its secret, by webhook-id
    (an at-least-once repeat is not a new event)."""
    events: dict[str, dict[str, Any]] = {}
    for receipt in receiver.received["hook"]:
        event = Webhook(endpoint["secret"]).verify(receipt.body, receipt.headers)
        events.setdefault(receipt.webhook_id, event)
    return events


async def _order(gateway: httpx.AsyncClient, headers: dict[str, str]) -> str:
    placed = await place(gateway, headers)
    assert placed.status_code == 201, placed.text
    order_id: str = placed.json()["data"]["id"]
    return order_id


async def test_each_customer_receives_only_their_own_orders_events(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    admin_headers = await admin(gateway, stack)
    alice, alice_headers = await customer(gateway)
    bob, bob_headers = await customer(gateway)
    async with (
        webhook_receiver() as alices_receiver,
        webhook_receiver() as bobs_receiver,
        webhook_receiver() as admins_receiver,
    ):
        alices = await _register(gateway, alice_headers, alices_receiver.url())
        bobs = await _register(gateway, bob_headers, bobs_receiver.url())
        admins = await _register(gateway, admin_headers, admins_receiver.url())
        assert (alices["audience"], alices["ownerId"]) == ("owner", alice["id"])
        assert (bobs["audience"], admins["audience"]) == ("owner", "all")

        # Neither customer sees the other's endpoint, nor may ask for every user's events.
        for path in (f"/api/webhooks/{bobs['id']}", f"/api/webhooks/{bobs['id']}/deliveries"):
            hidden = await gateway.get(path, headers=alice_headers)
            assert hidden.status_code == 404, hidden.text
        listed = await gateway.get("/api/webhooks", headers=alice_headers)
        assert [e["id"] for e in listed.json()["data"]] == [alices["id"]]
        everyone = await gateway.post(
            "/api/webhooks",
            json={"url": alices_receiver.url(), "eventTypes": ["*"], "audience": "all"},
            headers=alice_headers,
        )
        assert everyone.status_code == 403, everyone.text

        alices_order = await _order(gateway, alice_headers)
        bobs_order = await _order(gateway, bob_headers)

        async def both_at_the_admins() -> bool:
            subjects = {e["subject"] for e in _verified(admins_receiver, admins).values()}
            return {alices_order, bobs_order} <= subjects

        await eventually(both_at_the_admins, "both orders' events at the admin's receiver")

        async def each_at_their_own() -> bool:
            return bool(_verified(alices_receiver, alices)) and bool(_verified(bobs_receiver, bobs))

        await eventually(each_at_their_own, "each customer's order at their receiver")
        # Each event's deliveries are written together: the admin's arrived, so were theirs.
        alices_events = _verified(alices_receiver, alices).values()
        bobs_events = _verified(bobs_receiver, bobs).values()
        assert {(e["type"], e["subject"]) for e in alices_events} == {
            ("orders.order.created", alices_order)
        }
        assert {(e["type"], e["subject"]) for e in bobs_events} == {
            ("orders.order.created", bobs_order)
        }
        assert {e["data"]["userId"] for e in alices_events} == {alice["id"]}
        assert {e["data"]["userId"] for e in bobs_events} == {bob["id"]}

        deliveries = await gateway.get(
            f"/api/webhooks/{alices['id']}/deliveries", headers=alice_headers
        )
        assert deliveries.status_code == 200, deliveries.text
        assert {d["subject"] for d in deliveries.json()["data"]} == {alices_order}
