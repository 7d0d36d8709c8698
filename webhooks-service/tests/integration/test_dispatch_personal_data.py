"""A deleted user's personal data leaves the deliveries, from users-service's own event: real
nats-server, API and dispatcher processes, a real database and receiver."""

from __future__ import annotations

import uuid
from typing import Any

from standardwebhooks import Webhook

from api_testkit.events import eventually


async def _events(stack, endpoint_id: str) -> dict[str, dict[str, Any]]:
    return {d["eventId"]: d["event"] for d in await stack.deliveries(endpoint_id, limit=100)}


async def test_a_deleted_users_deliveries_are_redacted_and_later_ones_stored_redacted(
    webhooks_stack,
) -> None:
    stack = webhooks_stack
    everything = await stack.register("everything", ["*"])
    user, other = str(uuid.uuid4()), str(uuid.uuid4())
    email = f"{user}@example.com"
    theirs = [
        await stack.publish("users.user.created", user, {"id": user, "email": email}),
        await stack.publish("orders.order.created", "order-1", {"userId": user, "note": email}),
    ]
    kept = await stack.publish("users.user.created", other, {"id": other, "name": "Grace"})
    await stack.receiver.wait_for("everything", 3)

    deletion = await stack.publish("users.user.deleted", user, {"id": user})

    async def redacted() -> bool:
        # The deletion's own delivery is written after the redaction: wait for both.
        events = await _events(stack, everything["id"])
        return deletion["id"] in events and all("data" not in events[e["id"]] for e in theirs)

    await eventually(redacted, "the deleted user's deliveries redacted, then its own")
    events = await _events(stack, everything["id"])
    for published in theirs:
        stored = events[published["id"]]
        assert email not in str(stored)
        assert {k: published[k] for k in ("id", "type", "subject", "time")} == {
            k: stored[k] for k in ("id", "type", "subject", "time")
        }
    assert events[kept["id"]] == kept  # another user's stays as it was
    assert events[deletion["id"]] == deletion  # receivers need it to delete their copies

    # orders-service deletes the user's orders after the user: those events come later, and
    # are stored, and sent, without the data.
    late = await stack.publish("orders.order.deleted", "order-1", {"userId": user, "note": email})
    receipts = await stack.receiver.wait_for("everything", 5)
    (sent,) = [r for r in receipts if r.webhook_id == late["id"]]
    assert email.encode() not in sent.body
    assert "data" not in Webhook(everything["secret"]).verify(sent.body, sent.headers)
    assert "data" not in (await _events(stack, everything["id"]))[late["id"]]


async def test_a_delivery_sent_again_after_the_users_deletion_goes_out_redacted(
    webhooks_stack,
) -> None:
    stack = webhooks_stack
    endpoint = await stack.register("resent", ["users.user.updated"])
    stack.receiver.scripts["resent"] = [503, 503, 503]
    user = str(uuid.uuid4())
    email = f"{user}@example.com"
    update = await stack.publish("users.user.updated", user, {"id": user, "email": email})
    failed = await stack.wait_for_status(endpoint["id"], "failed")
    assert failed["event"] == update

    await stack.publish("users.user.deleted", user, {"id": user})

    async def redacted() -> bool:
        (delivery,) = await stack.deliveries(endpoint["id"])
        return "data" not in delivery["event"]

    await eventually(redacted, "the failed delivery redacted")
    replay = await stack.api.post(
        f"/api/webhooks/{endpoint['id']}/deliveries/{failed['id']}/replay", headers=stack.admin
    )
    assert replay.status_code == 202, replay.text
    *_, resent = await stack.receiver.wait_for("resent", 4)
    assert email.encode() not in resent.body
    event = Webhook(endpoint["secret"]).verify(resent.body, resent.headers)
    assert event == {
        k: update[k] for k in ("specversion", "id", "source", "type", "subject", "time")
    }
