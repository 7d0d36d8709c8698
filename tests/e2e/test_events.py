"""docs/api.md#events through the whole stack: the Procfile's own nats-server, real services."""

from __future__ import annotations

import httpx
import nats
import pytest
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeoutError

from api_shared.events.access import ORDERS_SERVICE, WEBHOOKS_DISPATCHER
from api_shared.events.envelope import CloudEvent
from api_testkit.actors import admin, customer
from api_testkit.events import eventually, nats_client, read_stream
from api_testkit.orders import place
from api_testkit.stack import Stack

pytestmark = pytest.mark.processes  # reads the stack's nats-server, stops orders-service


async def placed(gateway: httpx.AsyncClient, headers: dict[str, str]) -> str:
    order = await place(gateway, headers)
    assert order.status_code == 201, order.text
    order_id: str = order.json()["data"]["id"]
    return order_id


async def test_an_orders_life_is_on_jetstream_as_exactly_its_events_in_order(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    _, headers = await customer(gateway)
    admin_headers = await admin(gateway, stack)
    order_id = await placed(gateway, headers)
    for status in ("confirmed", "shipped", "delivered"):
        changed = await gateway.patch(
            f"/orders/{order_id}", json={"status": status}, headers=admin_headers
        )
        assert changed.status_code == 200, changed.text

    async def types() -> list[str]:
        stored = await read_stream(stack.nats_login(), "ORDERS")
        return [m.event.type for m in stored if m.event.subject == order_id]

    async def four_published() -> bool:
        return len(await types()) >= 4

    await eventually(four_published, "the order's events on the ORDERS stream")
    assert await types() == [
        "orders.order.created",
        "orders.order.confirmed",
        "orders.order.shipped",
        "orders.order.delivered",
    ]


async def test_a_users_orders_follow_them_even_if_orders_service_was_down_at_the_deletion(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    user, headers = await customer(gateway)
    user_id = user["id"]
    orders = [await placed(gateway, headers) for _ in range(2)]
    admin_headers = await admin(gateway, stack)

    stack.services["orders"].stop()
    try:
        deleted = await gateway.delete(f"/api/users/{user_id}", headers=admin_headers)
        assert deleted.status_code == 204
    finally:
        stack.services["orders"].start()
        await stack.until_ready("orders")

    async def none_left() -> bool:
        listed = await gateway.get("/orders", params={"userId": user_id}, headers=admin_headers)
        return listed.status_code == 200 and listed.json()["page"]["total"] == 0

    await eventually(none_left, "the deleted user's orders to be deleted")

    async def deletions_published() -> bool:
        stored = await read_stream(stack.nats_login(), "ORDERS")
        deleted = {m.event.subject for m in stored if m.event.type == "orders.order.deleted"}
        return deleted >= set(orders)

    await eventually(deletions_published, "an orders.order.deleted event for each order")


async def test_a_forged_user_deletion_on_the_broker_deletes_no_orders(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    """The attack of the security issue: from a machine that reaches NATS, publish
    ``users.user.deleted`` for a victim. Without credentials the broker refuses the
    connection; with another process's (the dispatcher's, orders-service's own) it refuses
    the subject. A genuine deletion made afterwards goes through, and the consumer takes the
    stream in order: once that user's orders are gone, a forgery would have been handled."""
    victim, victim_headers = await customer(gateway)
    kept = await placed(gateway, victim_headers)
    forged = CloudEvent(
        source="/users-service",
        type="users.user.deleted",
        subject=victim["id"],
        data={"id": victim["id"]},
    )

    with pytest.raises(NatsError, match="Authorization Violation"):
        await nats.connect(stack.nats_url, connect_timeout=2, allow_reconnect=False)
    for user in (WEBHOOKS_DISPATCHER, ORDERS_SERVICE):
        async with nats_client(stack.nats_login(user.name)) as client:
            await client.publish(forged.nats_subject, forged.to_json())
            with pytest.raises(NatsTimeoutError):  # no stream acks what the server dropped
                await client.jetstream().publish(
                    forged.nats_subject, forged.to_json(), stream="USERS", timeout=1.0
                )

    other, other_headers = await customer(gateway)
    deleted_order = await placed(gateway, other_headers)
    admin_headers = await admin(gateway, stack)
    deleted = await gateway.delete(f"/api/users/{other['id']}", headers=admin_headers)
    assert deleted.status_code == 204

    async def genuine_deletion_handled() -> bool:
        found = await gateway.get(f"/orders/{deleted_order}", headers=admin_headers)
        return found.status_code == 404

    await eventually(genuine_deletion_handled, "the genuine deletion's orders to be deleted")
    still_there = await gateway.get(f"/orders/{kept}", headers=victim_headers)
    assert still_there.status_code == 200, still_there.text
    stored = await read_stream(stack.nats_login(), "USERS")
    assert forged.id not in {m.event.id for m in stored}
