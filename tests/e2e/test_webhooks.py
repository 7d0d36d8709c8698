"""docs/api.md#webhooks through the whole stack: an admin registers an endpoint through the
gateway, an order's life through the gateway (placed, confirmed, shipped, delivered) becomes
orders-service's events on the Procfile's nats-server, and the Procfile's dispatcher POSTs
them to the endpoint, signed and in order. The signature is
checked with the Standard Webhooks reference library.
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
from api_testkit.webhooks import webhook_receiver

pytestmark = pytest.mark.processes  # the receiver listens on this machine's loopback


async def test_an_orders_life_reaches_a_registered_endpoint_signed_and_in_order(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    admin_headers = await admin(gateway, stack)
    async with webhook_receiver() as hook:
        created = await gateway.post(
            "/api/webhooks",
            json={"url": hook.url(), "eventTypes": ["orders.order.*"]},
            headers=admin_headers,
        )
        assert created.status_code == 201, created.text
        endpoint = created.json()["data"]

        _, headers = await customer(gateway)
        order = await place(gateway, headers)
        assert order.status_code == 201, order.text
        order_id = order.json()["data"]["id"]
        for status in ("confirmed", "shipped", "delivered"):
            changed = await gateway.patch(
                f"/orders/{order_id}", json={"status": status}, headers=admin_headers
            )
            assert changed.status_code == 200, changed.text

        def events_of_the_order() -> dict[str, dict[str, Any]]:
            """Verified events by webhook-id: receivers de-duplicate on it, an at-least-once
            repeat is not a new event; another test's order may come too."""
            events: dict[str, dict[str, Any]] = {}
            for receipt in hook.received["hook"]:
                event = Webhook(endpoint["secret"]).verify(receipt.body, receipt.headers)
                assert receipt.webhook_id == event["id"]
                if event["subject"] == order_id:
                    events.setdefault(receipt.webhook_id, event)
            return events

        async def all_four() -> bool:
            return len(events_of_the_order()) >= 4

        await eventually(all_four, "the order's four events at the receiver")
        events = events_of_the_order()
        assert [e["type"] for e in events.values()] == [
            "orders.order.created",
            "orders.order.confirmed",
            "orders.order.shipped",
            "orders.order.delivered",
        ]
        assert [e["sequence"] for e in events.values()] == sorted(
            e["sequence"] for e in events.values()
        )
        assert {e["source"] for e in events.values()} == {"/orders-service"}

        deliveries = await gateway.get(
            f"/api/webhooks/{endpoint['id']}/deliveries", headers=admin_headers
        )
        assert deliveries.status_code == 200, deliveries.text
        assert set(events) <= {d["eventId"] for d in deliveries.json()["data"]}
