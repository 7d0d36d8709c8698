"""An endpoint whose owner is no longer an active admin is disabled, from users-service's own
events: real nats-server, API and dispatcher processes, a real database and receiver.

users-service publishes ``users.user.updated`` (the User after the change) and
``users.user.deleted``; here the test publishes them on the USERS stream as its relay does.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import httpx

from api_testkit.actors import another_admin
from api_testkit.callers import Caller
from api_testkit.events import eventually


async def _admin(users_api: httpx.AsyncClient, admin: Caller) -> tuple[str, dict[str, str]]:
    """A new admin of users-service: their id and the headers of their token."""
    made = await another_admin(users_api, admin)
    return made.id, made.headers


def _user(user_id: str, role: str, active: bool = True) -> dict[str, Any]:
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    return {
        "id": user_id,
        "name": "Ada",
        "email": f"{user_id}@example.com",
        "role": role,
        "isActive": active,
        "createdAt": now,
        "updatedAt": now,
    }


async def _until_disabled(stack, endpoint_id: str) -> dict[str, Any]:
    found: dict[str, Any] = {}

    async def disabled() -> bool:
        found.update(await stack.endpoint(endpoint_id))
        return found["enabled"] is False

    await eventually(disabled, f"endpoint {endpoint_id} disabled")
    return found


async def test_an_admin_demoted_to_customer_loses_their_endpoints_and_only_theirs(
    webhooks_stack, users_api, admin
) -> None:
    stack = webhooks_stack
    demoted_id, demoted = await _admin(users_api, admin)
    kept_id, kept = await _admin(users_api, admin)
    theirs = [
        await stack.register("demoted-1", ["orders.order.shipped"], admin=demoted),
        await stack.register("demoted-2", ["orders.*"], admin=demoted),
    ]
    other = await stack.register("kept", ["orders.order.shipped"], admin=kept)
    assert {e["ownerId"] for e in theirs} == {demoted_id}

    demotion = await stack.publish(
        "users.user.updated", demoted_id, _user(demoted_id, role="customer")
    )
    # Another admin's unrelated change (a new name) takes nothing away.
    await stack.publish("users.user.updated", kept_id, _user(kept_id, role="admin"))
    for endpoint in theirs:
        disabled = await _until_disabled(stack, endpoint["id"])
        assert disabled["disabledReason"] == "owner-not-admin"
        assert disabled["ownerId"] == demoted_id

    # Nothing is delivered to them; the other admin's endpoint gets the event.
    shipped = await stack.publish("orders.order.shipped", str(uuid.uuid4()), {"n": 1})
    (receipt,) = await stack.receiver.wait_for("kept", 1)
    assert receipt.webhook_id == shipped["id"]
    assert (await stack.endpoint(other["id"]))["enabled"] is True
    for endpoint, name in zip(theirs, ("demoted-1", "demoted-2"), strict=True):
        assert stack.receiver.received[name] == []
        assert await stack.deliveries(endpoint["id"]) == []

    # The same event again (JetStream redelivers): nothing more changes.
    first = await stack.endpoint(theirs[0]["id"])
    await stack.register("users-marker", ["users.user.created"], admin=kept)
    await stack.publish_document(demotion, msg_id=f"{demotion['id']}-again")
    # The USERS stream is taken in order: once its next event is delivered, the repeat was
    # handled.
    marker = await stack.publish("users.user.created", str(uuid.uuid4()), {})
    (seen,) = await stack.receiver.wait_for("users-marker", 1)
    assert seen.webhook_id == marker["id"]
    assert await stack.endpoint(theirs[0]["id"]) == first


async def test_re_enabled_by_an_admin_an_endpoint_takes_deliveries_and_has_a_new_owner(
    webhooks_stack, users_api, admin
) -> None:
    stack = webhooks_stack
    suspended_id, suspended = await _admin(users_api, admin)
    rescuer_id, rescuer = await _admin(users_api, admin)
    endpoint = await stack.register("rescued", ["orders.order.delivered"], admin=suspended)
    # A delivery waiting for a retry when its endpoint is disabled: not attempted meanwhile.
    stack.receiver.scripts["rescued"] = [503]
    waiting = await stack.publish("orders.order.delivered", str(uuid.uuid4()), {})
    await stack.receiver.wait_for("rescued", 1)

    await stack.publish(
        "users.user.updated", suspended_id, _user(suspended_id, role="admin", active=False)
    )
    disabled = await _until_disabled(stack, endpoint["id"])
    assert disabled["disabledReason"] == "owner-suspended"
    later = await stack.publish("orders.order.delivered", str(uuid.uuid4()), {})
    # Deliveries are claimed earliest due first: once a delivery due after the waiting one's
    # retry has gone out, that retry would have gone too, had it been claimable.
    await stack.register("witness", ["orders.order.delivered"], admin=rescuer)
    (pending,) = await stack.deliveries(endpoint["id"])
    assert pending["eventId"] == waiting["id"]
    due = datetime.fromisoformat(pending["nextAttemptAt"])

    async def retry_due() -> bool:
        return datetime.now(UTC) > due

    await eventually(retry_due, "the waiting delivery's retry to come due")
    witnessed = await stack.publish("orders.order.delivered", str(uuid.uuid4()), {})

    # The witness may also get ``later`` (taken from the stream after it was registered).
    async def witnessed_delivered() -> bool:
        return witnessed["id"] in {r.webhook_id for r in stack.receiver.received["witness"]}

    await eventually(witnessed_delivered, "the witness's delivery after the retry came due")
    (still,) = await stack.deliveries(endpoint["id"])
    assert (still["status"], still["attemptCount"]) == ("pending", 1)
    assert len(stack.receiver.received["rescued"]) == 1
    assert later["id"] not in {d["eventId"] for d in await stack.deliveries(endpoint["id"])}

    enabled = await stack.api.patch(
        f"/api/webhooks/{endpoint['id']}", json={"enabled": True}, headers=rescuer
    )
    assert enabled.status_code == 200, enabled.text
    assert (enabled.json()["data"]["ownerId"], enabled.json()["data"]["createdBy"]) == (
        rescuer_id,
        suspended_id,
    )
    _, retried = await stack.receiver.wait_for("rescued", 2)
    assert retried.webhook_id == waiting["id"]
    delivered = await stack.wait_for_status(endpoint["id"], "delivered")
    assert [a["statusCode"] for a in delivered["attempts"]] == [503, 200]
    after = await stack.publish("orders.order.delivered", str(uuid.uuid4()), {})
    _, _, newest = await stack.receiver.wait_for("rescued", 3)
    assert newest.webhook_id == after["id"]


async def test_a_deleted_admins_endpoints_are_disabled(webhooks_stack, users_api, admin) -> None:
    stack = webhooks_stack
    deleted_id, deleted = await _admin(users_api, admin)
    endpoint = await stack.register("deleted-owner", ["users.*"], admin=deleted)
    await stack.publish("users.user.deleted", deleted_id, {"id": deleted_id})
    disabled = await _until_disabled(stack, endpoint["id"])
    assert disabled["disabledReason"] == "owner-deleted"


async def test_a_claimed_accounts_endpoints_are_all_disabled_and_get_nothing_more(
    webhooks_stack, users_api, admin
) -> None:
    # users.user.claimed: the owner of the account's address took it back from whoever
    # opened it with that address. Every endpoint of the account is that holder's.
    stack = webhooks_stack
    claimed_id, claimed = await _admin(users_api, admin)
    everyone = await stack.register("claimed-all", ["orders.*"], admin=claimed)
    registered = await stack.api.post(
        "/api/webhooks",
        json={
            "url": stack.receiver.url("claimed-own"),
            "eventTypes": ["orders.*"],
            "audience": "owner",
        },
        headers=claimed,
    )
    assert registered.status_code == 201, registered.text
    own = registered.json()["data"]
    witness = await stack.register("claim-witness", ["orders.order.created"])

    await stack.publish("users.user.claimed", claimed_id, {"id": claimed_id})
    for endpoint in (everyone, own):
        disabled = await _until_disabled(stack, endpoint["id"])
        assert disabled["disabledReason"] == "account-claimed"
        assert disabled["disabledAt"] is not None

    # The new holder's order: the stack admin's endpoint gets it, the claimed ones nothing.
    order = await stack.publish("orders.order.created", str(uuid.uuid4()), {"userId": claimed_id})
    (receipt,) = await stack.receiver.wait_for("claim-witness", 1)
    assert receipt.webhook_id == order["id"]
    assert (await stack.endpoint(witness["id"]))["enabled"] is True
    for endpoint, name in ((everyone, "claimed-all"), (own, "claimed-own")):
        assert stack.receiver.received[name] == []
        assert await stack.deliveries(endpoint["id"]) == []
