"""Tortoise queries for endpoints and, as the API shows them, their deliveries: the
``EndpointStore`` and ``DeliveryHistory`` of ``endpoints.ports``.

``pending_delivery`` writes the one row shape of a new delivery, for the test events queued
here and for the dispatcher's deliveries (``delivery.repository``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

from api_shared.paging import page_order
from webhooks_service.events import IncomingEvent
from webhooks_service.models import (
    Attempt,
    Audience,
    Delivery,
    DeliveryStatus,
    DisabledReason,
    Endpoint,
)
from webhooks_service.secret_box import SealedSecretError, SecretBox

logger = logging.getLogger(__name__)


class EndpointRepository:
    async def create(
        self,
        *,
        url: str,
        event_types: list[str],
        description: str,
        secret: str,
        now: datetime,
        created_by: str | None = None,
        audience: Audience = Audience.ALL,
    ) -> Endpoint:
        return await Endpoint.create(
            id=uuid4(),
            url=url,
            event_types=event_types,
            description=description,
            secret=secret,
            created_by=created_by,
            owner_id=created_by,
            audience=audience,
            created_at=now,
            updated_at=now,
        )

    async def get(self, endpoint_id: UUID) -> Endpoint | None:
        return await Endpoint.get_or_none(id=endpoint_id)

    async def update(self, endpoint: Endpoint, changes: dict[str, Any], now: datetime) -> Endpoint:
        for name, value in changes.items():
            setattr(endpoint, name, value)
        endpoint.updated_at = now
        await endpoint.save(update_fields=[*changes, "updated_at"])
        return endpoint

    async def delete(self, endpoint_id: UUID) -> bool:
        deleted: int = await Endpoint.filter(id=endpoint_id).delete()
        return deleted == 1

    async def page(
        self,
        *,
        sort: str,
        descending: bool,
        limit: int,
        offset: int,
        owner_id: str | None = None,
        audience: Audience | None = None,
    ) -> tuple[list[Endpoint], int]:
        query = Endpoint.all()
        if owner_id is not None:
            query = query.filter(owner_id=owner_id)
        if audience is not None:
            query = query.filter(audience=audience)
        ordering = page_order(sort, descending=descending)
        rows = await query.order_by(*ordering).offset(offset).limit(limit)
        return list(rows), await query.count()

    async def enabled(self) -> list[Endpoint]:
        """The endpoints that take new deliveries."""
        return list(await Endpoint.filter(enabled=True))

    async def enabled_owned(self, owner_id: str) -> list[Endpoint]:
        """The endpoints ``owner_id`` answers for that take new deliveries."""
        return list(await Endpoint.filter(owner_id=owner_id, enabled=True))

    async def disable_owned(
        self,
        owner_id: str,
        reason: DisabledReason,
        now: datetime,
        audience: Audience | None = None,
    ) -> int:
        """Disable every enabled endpoint ``owner_id`` answers for (of ``audience`` only, when
        given); how many (none the second time: a redelivered event changes nothing)."""
        query = Endpoint.filter(owner_id=owner_id, enabled=True)
        if audience is not None:
            query = query.filter(audience=audience)
        disabled: int = await query.update(
            enabled=False, disabled_reason=reason, disabled_at=now, updated_at=now
        )
        return disabled

    async def disable_failing(self, failing_before: datetime, now: datetime) -> list[Endpoint]:
        """Disable every enabled endpoint failing since before ``failing_before`` (reason
        ``failing``); the endpoints disabled. Each write is conditional on what was read, so
        concurrent dispatchers disable (and report) each endpoint once, and one that
        succeeded or was re-enabled meanwhile is left alone."""
        disabled: list[Endpoint] = []
        candidates = await Endpoint.filter(enabled=True, failing_since__lt=failing_before)
        for endpoint in candidates:
            changes = {
                "enabled": False,
                "disabled_reason": DisabledReason.FAILING,
                "disabled_at": now,
                "updated_at": now,
            }
            if await Endpoint.filter(
                id=endpoint.id, enabled=True, failing_since__lt=failing_before
            ).update(**changes):
                for name, value in changes.items():
                    setattr(endpoint, name, value)
                disabled.append(endpoint)
        return disabled

    async def reseal(self, box: SecretBox) -> int:
        """Seal again with the box's first key every secret that is not (a plaintext one, or
        one under an older key); how many endpoints changed. Each write is conditional on the
        values read, so a rotation meanwhile is never undone."""
        changed = 0
        rows = await Endpoint.all().values_list("id", "secret", "previous_secret")
        for endpoint_id, secret, previous in rows:
            updates: dict[str, str] = {}
            try:
                resealed = box.reseal(secret)
                resealed_previous = box.reseal(previous) if previous is not None else None
            except SealedSecretError:
                # The others are still resealed; this one waits for its key to come back.
                logger.error("cannot open a webhook secret", extra={"endpoint": str(endpoint_id)})
                continue
            if resealed is not None:
                updates["secret"] = resealed
            if resealed_previous is not None:
                updates["previous_secret"] = resealed_previous
            if updates:
                changed += await Endpoint.filter(
                    id=endpoint_id, secret=secret, previous_secret=previous
                ).update(**updates)
        return changed

    async def end_grace_periods(self, now: datetime) -> int:
        """Forget the replaced secrets whose grace period is over; how many."""
        ended: int = await Endpoint.filter(previous_secret_until__lte=now).update(
            previous_secret=None, previous_secret_until=None
        )
        return ended


class DeliveryHistoryRepository:
    async def queue(self, event: IncomingEvent, endpoint: Endpoint, now: datetime) -> Delivery:
        """A pending delivery of ``event`` (a test event: a new id, never seen before) to
        ``endpoint``, due now."""
        return await pending_delivery(event, endpoint, event.payload, event.user_id, now)

    async def get(self, endpoint_id: UUID, delivery_id: UUID) -> Delivery | None:
        return await Delivery.get_or_none(id=delivery_id, endpoint_id=endpoint_id)

    async def page(
        self,
        endpoint_id: UUID,
        *,
        status: DeliveryStatus | None,
        descending: bool,
        limit: int,
        offset: int,
    ) -> tuple[list[Delivery], int]:
        query = Delivery.filter(endpoint_id=endpoint_id)
        if status is not None:
            query = query.filter(status=status)
        ordering = page_order("created_at", descending=descending, tie="stream_sequence")
        rows = await query.order_by(*ordering).offset(offset).limit(limit)
        return list(rows), await query.count()

    async def attempts_of(self, deliveries: Sequence[Delivery]) -> dict[UUID, list[Attempt]]:
        found: dict[UUID, list[Attempt]] = {delivery.id: [] for delivery in deliveries}
        rows = await Attempt.filter(delivery_id__in=list(found)).order_by("attempted_at")
        for attempt in rows:
            found[UUID(str(attempt.delivery_id))].append(attempt)
        return found

    async def replay(self, delivery: Delivery, now: datetime) -> bool:
        """Make a finished delivery pending again, due now, with a fresh schedule, and read
        ``delivery`` again; False when it is still pending."""
        updated = await Delivery.filter(
            id=delivery.id, status__in=[DeliveryStatus.FAILED, DeliveryStatus.DELIVERED]
        ).update(
            status=DeliveryStatus.PENDING,
            next_attempt_at=now,
            failures=0,
            claim=None,
            updated_at=now,
        )
        if updated != 1:
            return False
        await delivery.refresh_from_db()
        return True


async def pending_delivery(
    event: IncomingEvent, endpoint: Endpoint, payload: str, user_id: str | None, now: datetime
) -> Delivery:
    """A new pending delivery of ``event`` to ``endpoint``, due now."""
    return await Delivery.create(
        id=uuid4(),
        endpoint_id=endpoint.id,
        event_id=event.id,
        event_type=event.type,
        subject=event.subject,
        stream=event.stream,
        stream_sequence=event.stream_sequence,
        payload=payload,
        user_id=user_id,
        status=DeliveryStatus.PENDING,
        next_attempt_at=now,
        created_at=now,
        updated_at=now,
    )
