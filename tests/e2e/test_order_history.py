"""docs/api.md#event-history through the whole stack: a webhook receiver that missed some of
an order's events (a gap in ``sequence``) catches up with ``GET /orders/{id}/events`` through
the gateway, and ends with every event of the order, in order, each the very document the
dispatcher delivered (same ``id``: de-duplicating by it merges both without a repeat)."""

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
    pytest.mark.processes,  # the receiver listens on this machine's loopback
    pytest.mark.needs(orders_service="1.2.0"),
]

MISSED = {2, 3, 4}  # the sequences the receiver "lost" (a receiver down for a while, say)


def verified_events(hook: WebhookReceiver, secret: str, order_id: str) -> dict[str, Any]:
    """The order's events the receiver got, signature checked, by id (a repeat is one)."""
    events: dict[str, Any] = {}
    for receipt in hook.received["hook"]:
        event = Webhook(secret).verify(receipt.body, receipt.headers)
        if event["subject"] == order_id:
            events.setdefault(receipt.webhook_id, event)
    return events


async def test_a_receiver_that_missed_events_catches_up_from_the_history(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    admin_headers = await admin(gateway, stack)
    async with webhook_receiver() as hook:
        registered = await gateway.post(
            "/api/webhooks",
            json={"url": hook.url(), "eventTypes": ["orders.order.*"]},
            headers=admin_headers,
        )
        assert registered.status_code == 201, registered.text
        secret = registered.json()["data"]["secret"]

        _, headers = await customer(gateway)
        order = await place(gateway, headers)
        assert order.status_code == 201, order.text
        order_id = order.json()["data"]["id"]
        url = f"/orders/{order_id}"
        changed = [await gateway.patch(url, json={"note": "ring twice"}, headers=headers)]
        for status in ("confirmed", "shipped", "delivered"):
            changed.append(await gateway.patch(url, json={"status": status}, headers=admin_headers))
        assert [r.status_code for r in changed] == [200] * 4, [r.text for r in changed]

        async def all_five_delivered() -> bool:
            return len(verified_events(hook, secret, order_id)) >= 5

        await eventually(all_five_delivered, "the order's five events at the receiver")
        delivered = verified_events(hook, secret, order_id)

    # What the receiver saw once it "lost" 2-4: 1, then 5, a gap it notices by sequence.
    seen = {i: e for i, e in delivered.items() if e["sequence"] not in MISSED}
    sequences = sorted(e["sequence"] for e in seen.values())
    assert sequences == [1, 5]
    last_in_order = sequences[0]  # the last sequence before the gap

    history = await gateway.get(f"{url}/events", params={"after": last_in_order}, headers=headers)

    assert history.status_code == 200, history.text
    fetched = history.json()
    assert [e["sequence"] for e in fetched["data"]] == [2, 3, 4, 5]
    assert fetched["page"] == {"after": 1, "limit": 100, "next": 5, "hasMore": False}
    caught_up = dict(seen)
    for event in fetched["data"]:
        caught_up.setdefault(event["id"], event)  # the receiver's own de-duplication
    ordered = sorted(caught_up.values(), key=lambda e: e["sequence"])
    assert [e["sequence"] for e in ordered] == [1, 2, 3, 4, 5]
    assert [e["type"] for e in ordered] == [
        "orders.order.created",
        "orders.order.patched",
        "orders.order.confirmed",
        "orders.order.shipped",
        "orders.order.delivered",
    ]
    # Every event the dispatcher delivered, and nothing else: the same ids, the same documents.
    assert set(caught_up) == set(delivered)
    assert caught_up == delivered
