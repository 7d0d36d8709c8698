"""A test event on demand (docs/api.md#webhooks) through the whole stack: an admin registers
an endpoint through the gateway and asks it a test event; the Procfile's dispatcher POSTs a
``webhooks.endpoint.tested`` event to the receiver, signed with the endpoint's secret (checked
with the Standard Webhooks reference library), and lists the delivery with the others."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

from api_testkit.actors import admin
from api_testkit.events import eventually
from api_testkit.stack import Stack
from api_testkit.webhooks import webhook_receiver

pytestmark = [
    pytest.mark.processes,  # the receiver listens on this machine's loopback
    pytest.mark.needs(webhooks_service="1.1.0"),
]


async def test_a_test_event_reaches_the_endpoint_signed_and_is_listed(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    headers = await admin(gateway, stack)
    async with webhook_receiver() as hook:
        created = await gateway.post(
            "/api/webhooks",
            json={"url": hook.url("tested"), "eventTypes": ["orders.order.deleted"]},
            headers=headers,
        )
        assert created.status_code == 201, created.text
        endpoint = created.json()["data"]
        base = f"/api/webhooks/{endpoint['id']}"

        queued = await gateway.post(f"{base}/test-events", headers=headers)

        assert queued.status_code == 202, queued.text
        delivery = queued.json()["data"]
        (receipt,) = await hook.wait_for("tested", 1)
        event = Webhook(endpoint["secret"]).verify(receipt.body, receipt.headers)
        assert event == delivery["event"]
        assert receipt.webhook_id == event["id"] == delivery["eventId"]
        assert (event["type"], event["source"], event["subject"]) == (
            "webhooks.endpoint.tested",
            "/webhooks-service",
            endpoint["id"],
        )
        assert event["data"]["endpointId"] == endpoint["id"]

        async def delivered() -> bool:
            listed = await gateway.get(f"{base}/deliveries", headers=headers)
            rows: list[dict[str, Any]] = listed.json()["data"]
            return [(row["id"], row["status"]) for row in rows] == [(delivery["id"], "delivered")]

        await eventually(delivered, "the test event's delivery, delivered")
