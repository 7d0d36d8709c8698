"""Personal data in deliveries, on a real database: a deleted user's deliveries are redacted
(and their later events stored redacted), and every delivery is purged after the retention
period. With real NATS and processes: test_dispatch_personal_data.py."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import orjson

from webhooks_service.delivery.maintenance import Maintenance
from webhooks_service.delivery.ports import Outcome
from webhooks_service.delivery.repository import DeliveryRepository
from webhooks_service.endpoints.repository import EndpointRepository
from webhooks_service.events import IncomingEvent
from webhooks_service.models import Attempt, Delivery, DeliveryStatus, Endpoint, ErasedUser
from webhooks_service.secret_box import SecretBox

RETENTION = timedelta(days=30)
LEASE = timedelta(seconds=60)


async def _endpoint(now: datetime) -> Endpoint:
    return await EndpointRepository().create(
        url="https://93.184.215.14/in",
        event_types=["*"],
        description="",
        secret="whsec_AAAA",
        now=now,
    )


def _event(
    event_type: str, subject: str, data: dict[str, Any], user_id: str | None
) -> IncomingEvent:
    event_id = str(uuid.uuid4())
    document = {"specversion": "1.0", "id": event_id, "type": event_type, "subject": subject}
    return IncomingEvent(
        id=event_id,
        type=event_type,
        subject=subject,
        stream=event_type.split(".")[0].upper(),
        stream_sequence=1,
        payload=orjson.dumps({**document, "data": data}).decode(),
        user_id=user_id,
    )


async def _payloads(endpoint: Endpoint) -> dict[str, dict[str, Any]]:
    rows = await Delivery.filter(endpoint_id=endpoint.id).values_list("event_id", "payload")
    return {event_id: orjson.loads(payload) for event_id, payload in rows}


async def test_erasing_a_user_redacts_their_deliveries_and_no_one_elses(base_url) -> None:
    deliveries, now = DeliveryRepository(), datetime.now(UTC)
    endpoint = await _endpoint(now)
    user, other = str(uuid.uuid4()), str(uuid.uuid4())
    theirs = [
        _event("users.user.created", user, {"email": f"{user}@example.com"}, user),
        _event("orders.order.created", "order-1", {"userId": user, "note": "ring"}, user),
    ]
    kept = [
        _event("users.user.created", other, {"email": f"{other}@example.com"}, other),
        _event("orders.order.shipped", "order-2", {"userId": other}, other),
    ]
    for event in (*theirs, *kept):
        await deliveries.add(event, [endpoint], now)

    assert await deliveries.erase(user, now) == 2
    assert await deliveries.erase(user, now) == 0  # a redelivered deletion
    payloads = await _payloads(endpoint)
    for event in theirs:
        assert "data" not in payloads[event.id]
        assert payloads[event.id]["subject"] == event.subject
        assert user not in orjson.dumps(payloads[event.id]).decode().replace(event.subject, "")
    for event in kept:
        assert payloads[event.id]["data"] == orjson.loads(event.payload)["data"]


async def test_an_event_about_an_erased_user_that_comes_later_is_stored_redacted(
    base_url,
) -> None:
    deliveries, now = DeliveryRepository(), datetime.now(UTC)
    endpoint = await _endpoint(now)
    user = str(uuid.uuid4())
    await deliveries.erase(user, now)
    late = _event("orders.order.deleted", "order-3", {"userId": user, "items": []}, user)
    assert await deliveries.add(late, [endpoint], now) == 1
    (stored,) = await Delivery.filter(endpoint_id=endpoint.id)
    assert "data" not in orjson.loads(stored.payload)
    assert stored.user_id is None


async def test_a_pending_delivery_goes_out_redacted_once_its_user_is_erased(base_url) -> None:
    deliveries, now = DeliveryRepository(), datetime.now(UTC)
    endpoint = await _endpoint(now)
    user = str(uuid.uuid4())
    event = _event("users.user.updated", user, {"email": f"{user}@example.com"}, user)
    await deliveries.add(event, [endpoint], now)
    await deliveries.erase(user, now)
    claimed = await deliveries.claim_due(now=now, lease=LEASE, limit=1000)
    (delivery,) = [d for d, e, _ in claimed if e.id == endpoint.id]
    assert delivery.status is DeliveryStatus.PENDING
    assert "data" not in orjson.loads(delivery.payload)  # what the attempt POSTs


async def test_deliveries_older_than_the_retention_are_purged_with_their_attempts(
    base_url, box: SecretBox
) -> None:
    deliveries, now = DeliveryRepository(), datetime.now(UTC)
    endpoint = await _endpoint(now)
    old_at, recent_at = now - RETENTION - timedelta(seconds=1), now - RETENTION + timedelta(hours=1)
    old = [_event("orders.order.created", f"o-{n}", {}, None) for n in range(3)]
    recent = _event("orders.order.created", "o-recent", {}, None)
    for event in old:
        await deliveries.add(event, [endpoint], old_at)
    await deliveries.add(recent, [endpoint], recent_at)
    old_ids = [d.id for d in await Delivery.filter(endpoint_id=endpoint.id, created_at=old_at)]
    (first_old, *_) = await Delivery.filter(id__in=old_ids)
    claim = uuid.uuid4()
    await Delivery.filter(id=first_old.id).update(claim=claim)
    outcome = Outcome(attempted_at=old_at, status_code=200, error=None, duration_ms=3)
    await deliveries.record(
        first_old,
        claim,
        outcome,
        status=DeliveryStatus.DELIVERED,
        next_attempt_at=None,
        failures=0,
        now=old_at,
    )
    forgotten, remembered = str(uuid.uuid4()), str(uuid.uuid4())
    await deliveries.erase(forgotten, old_at)
    await deliveries.erase(remembered, recent_at)

    done = await Maintenance(
        EndpointRepository(),
        deliveries,
        box,
        lambda: now,
        retention=RETENTION,
        disable_after=timedelta(days=5),
    ).run()

    assert done["deliveriesPurged"] >= 3
    assert done["erasuresForgotten"] >= 1
    # cast: Tortoise types values_list as tuples, even the flat list of one column.
    left = cast(
        list[str], await Delivery.filter(endpoint_id=endpoint.id).values_list("event_id", flat=True)
    )
    assert left == [recent.id]
    assert await Attempt.filter(delivery_id__in=old_ids).count() == 0
    assert not await ErasedUser.exists(user_id=forgotten)
    assert await ErasedUser.exists(user_id=remembered)
