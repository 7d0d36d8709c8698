"""Customers' endpoints (audience ``owner``) receive only the events about their own orders
and account; admins' (``all``) every one; users-service's events disable a customer's
endpoints when the account goes, and never for a profile change. Real nats-server, API and
dispatcher processes, a real database and receiver (conftest.py); events are published on
the streams as the services' relays do.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import httpx

from api_testkit.actors import another_admin, customer_caller
from api_testkit.callers import Caller
from api_testkit.events import eventually


def _user(user_id: str, role: str = "customer", active: bool = True) -> dict[str, Any]:
    """A User as users-service publishes it after a change."""
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    return {
        "id": user_id,
        "name": "A new name",
        "email": f"{user_id}@example.com",
        "role": role,
        "isActive": active,
        "createdAt": now,
        "updatedAt": now,
    }


def _names(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def _until_disabled(stack: Any, endpoint_id: str) -> dict[str, Any]:
    found: dict[str, Any] = {}

    async def disabled() -> bool:
        found.update(await stack.endpoint(endpoint_id))
        return found["enabled"] is False

    await eventually(disabled, f"endpoint {endpoint_id} disabled")
    return found


async def test_each_customer_gets_their_own_orders_events_and_an_admin_everyones(
    webhooks_stack, users_api: httpx.AsyncClient
) -> None:
    stack = webhooks_stack
    alice, bob = await customer_caller(users_api), await customer_caller(users_api)
    names = {who: _names(who) for who in ("alice", "bob", "admin")}
    alices = await stack.register(names["alice"], ["orders.*"], admin=alice.headers)
    bobs = await stack.register(names["bob"], ["orders.*"], admin=bob.headers)
    admins = await stack.register(names["admin"], ["orders.*"])
    assert (alices["audience"], bobs["audience"], admins["audience"]) == ("owner", "owner", "all")

    for_alice = await stack.publish("orders.order.created", "order-a", {"userId": alice.id})
    for_bob = await stack.publish("orders.order.created", "order-b", {"userId": bob.id})
    nobodys = await stack.publish("orders.order.created", "order-x", {})
    also_alice = await stack.publish("orders.order.shipped", "order-a", {"userId": alice.id})

    every = await stack.receiver.wait_for(names["admin"], 4)
    assert {r.webhook_id for r in every} == {
        e["id"] for e in (for_alice, for_bob, nobodys, also_alice)
    }
    # Each event's deliveries were written together: the admin's arrived, so did theirs.
    (first, second) = await stack.receiver.wait_for(names["alice"], 2)
    assert [first.webhook_id, second.webhook_id] == [for_alice["id"], also_alice["id"]]
    (only,) = await stack.receiver.wait_for(names["bob"], 1)
    assert only.webhook_id == for_bob["id"]
    assert {d["eventId"] for d in await stack.deliveries(alices["id"])} == {
        for_alice["id"],
        also_alice["id"],
    }
    assert [d["eventId"] for d in await stack.deliveries(bobs["id"])] == [for_bob["id"]]


async def test_a_customers_profile_change_leaves_their_endpoints_enabled(
    webhooks_stack, users_api: httpx.AsyncClient
) -> None:
    stack = webhooks_stack
    alice, bob = await customer_caller(users_api), await customer_caller(users_api)
    name, others = _names("alice"), _names("bob")
    alices = await stack.register(name, ["users.*", "orders.*"], admin=alice.headers)
    await stack.register(others, ["users.*"], admin=bob.headers)

    # users-service publishes every change of a user with the user's role: "customer" here.
    changed = await stack.publish("users.user.updated", alice.id, _user(alice.id))
    (received,) = await stack.receiver.wait_for(name, 1)
    assert received.webhook_id == changed["id"]  # about her: hers to receive
    later = await stack.publish("orders.order.patched", "order-a", {"userId": alice.id})
    _, after = await stack.receiver.wait_for(name, 2)
    assert after.webhook_id == later["id"]

    shown = await stack.endpoint(alices["id"])
    assert (shown["enabled"], shown["disabledReason"]) == (True, None)
    assert stack.receiver.received[others] == []  # not about bob


async def test_an_admin_demoted_keeps_their_owner_endpoints_and_loses_their_all_ones(
    webhooks_stack, users_api: httpx.AsyncClient, admin: Caller
) -> None:
    stack = webhooks_stack
    demoted = await another_admin(users_api, admin)
    everything = await stack.register(_names("all"), ["*"], admin=demoted.headers)
    response = await stack.api.post(
        "/api/webhooks",
        json={
            "url": stack.receiver.url(name := _names("own")),
            "eventTypes": ["orders.*"],
            "audience": "owner",
        },
        headers=demoted.headers,
    )
    assert response.status_code == 201, response.text
    own = response.json()["data"]

    await stack.publish("users.user.updated", demoted.id, _user(demoted.id, role="customer"))
    disabled = await _until_disabled(stack, everything["id"])
    assert disabled["disabledReason"] == "owner-not-admin"

    theirs = await stack.publish("orders.order.created", "order-d", {"userId": demoted.id})
    (received,) = await stack.receiver.wait_for(name, 1)
    assert received.webhook_id == theirs["id"]
    assert (await stack.endpoint(own["id"]))["enabled"] is True


async def test_a_customers_endpoints_go_with_their_account(
    webhooks_stack, users_api: httpx.AsyncClient
) -> None:
    stack = webhooks_stack
    suspended, deleted = await customer_caller(users_api), await customer_caller(users_api)
    theirs = await stack.register(_names("suspended"), ["orders.*"], admin=suspended.headers)
    gone = await stack.register(_names("deleted"), ["users.*"], admin=deleted.headers)

    await stack.publish("users.user.updated", suspended.id, _user(suspended.id, active=False))
    await stack.publish("users.user.deleted", deleted.id, {"id": deleted.id})

    assert (await _until_disabled(stack, theirs["id"]))["disabledReason"] == "owner-suspended"
    assert (await _until_disabled(stack, gone["id"]))["disabledReason"] == "owner-deleted"
