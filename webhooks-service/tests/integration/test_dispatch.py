"""Events on JetStream reach the endpoints that want them: signed, in order, retried, replayed.

Real nats-server, API and dispatcher processes, a real database and a real receiver; the
signatures are checked with the Standard Webhooks reference library, not our own code.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import httpx
import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from api_testkit.events import eventually


async def test_an_orders_life_reaches_its_endpoint_in_order_and_signed(webhooks_stack) -> None:
    stack = webhooks_stack
    orders = await stack.register("orders-life", ["orders.order.*"])
    users = await stack.register("users-life", ["users.user.created"])
    order_id = str(uuid.uuid4())
    published = [
        await stack.publish(f"orders.order.{change}", order_id, {"id": order_id, "n": n})
        for n, change in enumerate(("created", "confirmed", "shipped", "delivered"))
    ]
    user = await stack.publish("users.user.created", str(uuid.uuid4()), {"name": "Ada"})

    received = await stack.receiver.wait_for("orders-life", 4)
    verifier = Webhook(orders["secret"])
    assert [verifier.verify(r.body, r.headers) for r in received] == published
    assert [r.headers["webhook-id"] for r in received] == [e["id"] for e in published]
    assert all(r.headers["Content-Type"] == "application/json" for r in received)
    (only,) = await stack.receiver.wait_for("users-life", 1)
    assert Webhook(users["secret"]).verify(only.body, only.headers) == user

    deliveries = await stack.wait_for_all(orders["id"], len(published), "delivered")
    assert [d["eventType"] for d in deliveries] == [e["type"] for e in published]
    assert all(d["status"] == "delivered" for d in deliveries)
    assert [d["event"] for d in deliveries] == published


async def test_another_secret_does_not_verify_a_delivery(webhooks_stack) -> None:
    stack = webhooks_stack
    endpoint = await stack.register("forged", ["users.user.deleted"])
    await stack.publish("users.user.deleted", str(uuid.uuid4()), {})
    (delivery,) = await stack.receiver.wait_for("forged", 1)
    other = (await stack.register("unrelated", ["users.user.deleted"]))["secret"]
    assert other != endpoint["secret"]
    with pytest.raises(WebhookVerificationError):
        Webhook(other).verify(delivery.body, delivery.headers)


async def test_a_receiver_answering_500_then_200_gets_the_event_again(webhooks_stack) -> None:
    stack = webhooks_stack
    endpoint = await stack.register("flaky", ["orders.order.cancelled"])
    stack.receiver.scripts["flaky"] = [500]
    event = await stack.publish("orders.order.cancelled", str(uuid.uuid4()), {})

    first, second = await stack.receiver.wait_for("flaky", 2)
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == event["id"]
    assert Webhook(endpoint["secret"]).verify(second.body, second.headers) == event
    delivery = await stack.wait_for_status(endpoint["id"], "delivered")
    assert [a["statusCode"] for a in delivery["attempts"]] == [500, 200]
    assert delivery["attemptCount"] == 2
    assert delivery["nextAttemptAt"] is None
    assert all(a["error"] is None and a["durationMs"] >= 0 for a in delivery["attempts"])


async def test_a_delivery_failing_every_attempt_is_failed_and_a_replay_delivers_it(
    webhooks_stack,
) -> None:
    stack = webhooks_stack
    endpoint = await stack.register("down", ["orders.order.patched"])
    stack.receiver.scripts["down"] = [503, 503, 503]
    event = await stack.publish("orders.order.patched", str(uuid.uuid4()), {})

    failed = await stack.wait_for_status(endpoint["id"], "failed")
    assert [a["statusCode"] for a in failed["attempts"]] == [503, 503, 503]
    assert (await stack.deliveries(endpoint["id"], status="failed"))[0]["id"] == failed["id"]

    replay = await stack.api.post(
        f"/api/webhooks/{endpoint['id']}/deliveries/{failed['id']}/replay", headers=stack.admin
    )
    assert replay.status_code == 202, replay.text
    assert replay.json()["data"]["status"] == "pending"
    delivered = await stack.wait_for_status(endpoint["id"], "delivered")
    assert [a["statusCode"] for a in delivered["attempts"]] == [503, 503, 503, 200]
    last = stack.receiver.received["down"][-1]
    assert Webhook(endpoint["secret"]).verify(last.body, last.headers) == event

    again = await stack.api.post(
        f"/api/webhooks/{endpoint['id']}/deliveries/{uuid.uuid4()}/replay", headers=stack.admin
    )
    assert again.status_code == 404


async def test_a_receiver_that_cannot_be_reached_is_recorded_as_an_error(webhooks_stack) -> None:
    stack = webhooks_stack
    response = await stack.api.post(
        "/api/webhooks",
        json={"url": "http://127.0.0.1:9/nothing-listens", "eventTypes": ["users.*"]},
        headers=stack.admin,
    )
    endpoint = response.json()["data"]
    await stack.publish("users.user.created", str(uuid.uuid4()), {})
    failed = await stack.wait_for_status(endpoint["id"], "failed")
    assert [a["statusCode"] for a in failed["attempts"]] == [None, None, None]
    assert all(a["error"] for a in failed["attempts"])


async def test_an_event_seen_twice_is_delivered_once(webhooks_stack) -> None:
    stack = webhooks_stack
    endpoint = await stack.register("twice", ["orders.order.replaced"])
    event = await stack.publish("orders.order.replaced", str(uuid.uuid4()), {})
    # The same event under another message id: JetStream keeps both, the dispatcher one.
    await stack.publish_document(event, msg_id=f"{event['id']}-again")
    marker = await stack.publish("orders.order.replaced", str(uuid.uuid4()), {})

    received = await stack.receiver.wait_for("twice", 2)
    assert [r.headers["webhook-id"] for r in received] == [event["id"], marker["id"]]
    assert len(await stack.deliveries(endpoint["id"])) == 2


async def test_a_deleted_endpoint_gets_nothing_more(webhooks_stack) -> None:
    stack = webhooks_stack
    gone = await stack.register("gone", ["orders.order.deleted"])
    await stack.register("kept", ["orders.order.deleted"])
    deleted = await stack.api.delete(f"/api/webhooks/{gone['id']}", headers=stack.admin)
    assert deleted.status_code == 204
    await stack.publish("orders.order.deleted", str(uuid.uuid4()), {})
    await stack.receiver.wait_for("kept", 1)
    assert stack.receiver.received["gone"] == []


async def test_the_dispatcher_is_ready_and_counts_attempts_by_outcome(webhooks_stack) -> None:
    stack = webhooks_stack
    await stack.register("counted", ["users.user.deleted"])
    await stack.publish("users.user.deleted", str(uuid.uuid4()), {})
    await stack.receiver.wait_for("counted", 1)
    async with httpx.AsyncClient(base_url=stack.dispatcher_url) as dispatcher:
        ready = await dispatcher.get("/ready")
        metrics = (await dispatcher.get("/metrics")).text
    assert ready.status_code == 200
    assert ready.json()["checks"] == {
        "database": "ok",
        "schema": "ok",
        "nats": "ok",
        "deliveries": "ok",
    }
    delivered = [
        line
        for line in metrics.splitlines()
        if line.startswith('webhook_delivery_attempts_total{outcome="delivered"}')
    ]
    assert delivered
    assert float(delivered[0].split()[-1]) >= 1
    assert 'webhook_events_total{stream="USERS"}' in metrics


async def test_after_a_rotation_either_secret_verifies_until_the_grace_period_ends(
    webhooks_stack,
) -> None:
    stack = webhooks_stack
    endpoint = await stack.register("rotated", ["orders.order.confirmed"])
    original = endpoint["secret"]
    path = f"/api/webhooks/{endpoint['id']}/rotate-secret"

    # The default grace period: a receiver still holding the original secret accepts.
    rotated = (await stack.api.post(path, headers=stack.admin)).json()["data"]
    first = await stack.publish("orders.order.confirmed", str(uuid.uuid4()), {})
    (during,) = await stack.receiver.wait_for("rotated", 1)
    assert Webhook(original).verify(during.body, during.headers) == first
    assert Webhook(rotated["secret"]).verify(during.body, during.headers) == first

    # A rotation with a one-second grace period; once it is over only the newest verifies.
    latest = (await stack.api.post(path, json={"graceSeconds": 1}, headers=stack.admin)).json()[
        "data"
    ]
    ends = datetime.fromisoformat(latest["previousSecretUntil"])

    async def over() -> bool:  # on this machine's clock, which the dispatcher reads too
        return datetime.now(UTC) > ends

    await eventually(over, "the end of the one-second grace period")
    second = await stack.publish("orders.order.confirmed", str(uuid.uuid4()), {})
    _, after = await stack.receiver.wait_for("rotated", 2)
    assert Webhook(latest["secret"]).verify(after.body, after.headers) == second
    assert len(after.headers["webhook-signature"].split(" ")) == 1
    for retired in (original, rotated["secret"]):
        with pytest.raises(WebhookVerificationError):
            Webhook(retired).verify(after.body, after.headers)


async def test_a_test_event_is_sent_signed_and_retried_like_any_other(webhooks_stack) -> None:
    stack = webhooks_stack
    endpoint = await stack.register("tested", ["orders.order.deleted"])
    stack.receiver.scripts["tested"] = [500]

    queued = await stack.api.post(
        f"/api/webhooks/{endpoint['id']}/test-events", headers=stack.admin
    )

    assert queued.status_code == 202, queued.text
    first, second = await stack.receiver.wait_for("tested", 2)
    event = Webhook(endpoint["secret"]).verify(second.body, second.headers)
    assert event == queued.json()["data"]["event"]
    assert event["type"] == "webhooks.endpoint.tested"
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == event["id"]
    delivery = await stack.wait_for_status(endpoint["id"], "delivered")
    assert [a["statusCode"] for a in delivery["attempts"]] == [500, 200]
