"""Attempts written as the delivery loop records them, for the tests of what follows from
them (an endpoint's failure clock, its disabling by the upkeep)."""

from __future__ import annotations

from datetime import datetime
from uuid import uuid4

from webhooks_service.delivery.ports import Outcome
from webhooks_service.delivery.repository import DeliveryRepository
from webhooks_service.models import Delivery, DeliveryStatus


async def record_attempt(endpoint_id: str, status_code: int | None, at: datetime) -> None:
    """One attempt of a new delivery to the endpoint at ``at``: ``status_code`` answered, or
    None for no answer (a timeout)."""
    claim, event_id = uuid4(), str(uuid4())
    delivery = await Delivery.create(
        id=uuid4(),
        endpoint_id=endpoint_id,
        event_id=event_id,
        event_type="orders.order.created",
        subject=event_id,
        stream="ORDERS",
        stream_sequence=1,
        payload="{}",
        status=DeliveryStatus.PENDING,
        next_attempt_at=at,
        claim=claim,
        created_at=at,
        updated_at=at,
    )
    outcome = Outcome(at, status_code, None if status_code else "timeout: no answer", 5)
    recorded = await DeliveryRepository().record(
        delivery,
        claim,
        outcome,
        status=DeliveryStatus.DELIVERED if outcome.succeeded else DeliveryStatus.FAILED,
        next_attempt_at=None,
        failures=0 if outcome.succeeded else 1,
        now=at,
    )
    assert recorded
