"""docs/api.md#webhooks through the whole stack: an admin registers an endpoint through the
gateway, an order's life through the gateway (placed, confirmed, shipped, delivered) becomes
orders-service's events on the Procfile's nats-server, and the Procfile's dispatcher POSTs
them to the endpoint, signed and in order. The signature is
checked with the Standard Webhooks reference library.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from aiohttp import web
from standardwebhooks import Webhook

from api_testkit.actors import admin, customer
from api_testkit.orders import place
from api_testkit.ports import free_port
from api_testkit.stack import Stack

pytestmark = pytest.mark.processes  # the receiver listens on this machine's loopback

WAIT_S = 30.0


async def test_an_orders_life_reaches_a_registered_endpoint_signed_and_in_order(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    admin_headers = await admin(gateway, stack)
    received: asyncio.Queue[tuple[dict[str, str], bytes]] = asyncio.Queue()

    async def receive(request: web.Request) -> web.Response:
        await received.put((dict(request.headers), await request.read()))
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", receive)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        created = await gateway.post(
            "/api/webhooks",
            json={"url": f"http://127.0.0.1:{port}/hook", "eventTypes": ["orders.order.*"]},
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

        # Receivers de-duplicate on webhook-id: an at-least-once repeat is not a new event.
        events: dict[str, dict[str, object]] = {}
        while len(events) < 4:
            headers_sent, body = await asyncio.wait_for(received.get(), WAIT_S)
            event = Webhook(endpoint["secret"]).verify(body, headers_sent)
            assert headers_sent["webhook-id"] == event["id"]
            if event["subject"] == order_id:  # another test's order may come too
                events.setdefault(headers_sent["webhook-id"], event)
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
    finally:
        await runner.cleanup()
