"""Dispatchers share the deliveries: concurrent claims never take one delivery twice, and one
resource's deliveries are claimed in order (on PostgreSQL: row locks with SKIP LOCKED)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from uuid import UUID

from webhooks_service.delivery.repository import DeliveryRepository
from webhooks_service.endpoints.repository import EndpointRepository
from webhooks_service.events import IncomingEvent
from webhooks_service.models import Delivery, DeliveryStatus, Endpoint

LEASE = timedelta(seconds=60)


async def _endpoint() -> Endpoint:
    return await EndpointRepository().create(
        url="https://93.184.215.14/in",
        event_types=["*"],
        description="",
        secret="whsec_AAAA",
        now=datetime.now(UTC),
    )


def _event(subject: str, sequence: int) -> IncomingEvent:
    event_id = str(uuid.uuid4())
    return IncomingEvent(
        id=event_id,
        type="orders.order.created",
        subject=subject,
        stream="ORDERS",
        stream_sequence=sequence,
        payload=f'{{"id": "{event_id}"}}',
    )


async def test_concurrent_claims_take_each_due_delivery_once(base_url) -> None:
    repository = DeliveryRepository()
    endpoint = await _endpoint()
    now = datetime.now(UTC)
    for sequence in range(1, 21):
        # A subject each: none waits for another.
        await repository.add(_event(str(uuid.uuid4()), sequence), [endpoint], now)

    rounds = await asyncio.gather(
        *(repository.claim_due(now=now, lease=LEASE, limit=5) for _ in range(6))
    )
    claimed = [d.id for round_ in rounds for d, _, _ in round_ if d.endpoint_id == endpoint.id]
    assert len(claimed) == len(set(claimed)) == 20


async def test_a_subjects_later_delivery_waits_while_an_earlier_one_is_pending(base_url) -> None:
    repository = DeliveryRepository()
    endpoint = await _endpoint()
    subject, now = str(uuid.uuid4()), datetime.now(UTC)
    first, second = _event(subject, 1000), _event(subject, 1001)
    await repository.add(first, [endpoint], now)
    await repository.add(second, [endpoint], now)
    # The same event again (a redelivered message) adds nothing.
    assert await repository.add(first, [endpoint], now) == 0

    def ours(claims: list[tuple[Delivery, Endpoint, UUID]]) -> list[str]:
        return [d.event_id for d, _, _ in claims if d.endpoint_id == endpoint.id]

    assert ours(await repository.claim_due(now=now, lease=LEASE, limit=100)) == [first.id]
    # Claimed (in flight): the second still waits; once the first is done, it goes.
    assert ours(await repository.claim_due(now=now, lease=LEASE, limit=100)) == []
    (delivery,) = [d for d in await endpoint.deliveries.all() if d.event_id == first.id]
    await delivery.filter(id=delivery.id).update(status=DeliveryStatus.DELIVERED)
    assert ours(await repository.claim_due(now=now, lease=LEASE, limit=100)) == [second.id]
