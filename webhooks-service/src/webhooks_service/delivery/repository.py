"""Tortoise queries for the dispatcher's deliveries and attempts: the ``DeliveryStore`` of
``delivery.ports``.

``claim_due`` is how dispatchers share the work: on PostgreSQL it locks the rows it takes
with ``FOR UPDATE SKIP LOCKED``, so concurrent dispatchers never take the same delivery.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from datetime import datetime, timedelta
from uuid import UUID, uuid4

from tortoise.exceptions import IntegrityError
from tortoise.expressions import RawSQL, Subquery

from api_shared.transactions import in_transaction
from webhooks_service.delivery.ports import Outcome
from webhooks_service.endpoints import pending_delivery
from webhooks_service.events import IncomingEvent
from webhooks_service.models import (
    Attempt,
    Delivery,
    DeliveryStatus,
    Endpoint,
    ErasedUser,
)
from webhooks_service.personal_data import redacted

BATCH = 500  # rows per statement of the bulk work (redaction, purge)


# Whether a delivery waits for an earlier pending one of its endpoint and subject (the same
# SQL on PostgreSQL and SQLite; the outer row is the table's own name).
_WAITS_FOR_AN_EARLIER_ONE = """EXISTS (
    SELECT 1 FROM webhook_deliveries earlier
    WHERE earlier.endpoint_id = webhook_deliveries.endpoint_id
      AND earlier.subject = webhook_deliveries.subject
      AND earlier.stream = webhook_deliveries.stream
      AND earlier.status = 'pending'
      AND earlier.stream_sequence < webhook_deliveries.stream_sequence
)"""


class DeliveryRepository:
    async def add(self, event: IncomingEvent, endpoints: Iterable[Endpoint], now: datetime) -> int:
        """One pending delivery of ``event`` per endpoint, due now; an existing one is kept
        (the event was seen before). Returns how many were added.

        The event of a user who was deleted (``ErasedUser``) is stored redacted."""
        payload, user_id = event.payload, event.user_id
        if user_id is not None and await self.erased(user_id):
            payload, user_id = redacted(payload), None
        added = 0
        for endpoint in endpoints:
            try:
                await pending_delivery(event, endpoint, payload, user_id, now)
            except IntegrityError:
                continue
            added += 1
        # The user may have been deleted while these were written (the USERS stream is read
        # apart from the others): ``erase`` may have missed them, so redact them here.
        if added and user_id is not None and await self.erased(user_id):
            await self.redact(user_id, now)
        return added

    async def erased(self, user_id: str) -> bool:
        return await ErasedUser.exists(user_id=user_id)

    async def erase(self, user_id: str, now: datetime) -> int:
        """Remember that ``user_id`` was deleted, then redact every delivery carrying their
        data; how many were redacted (none the second time)."""
        with contextlib.suppress(IntegrityError):  # remembered already: a redelivered event
            await ErasedUser.create(user_id=user_id, erased_at=now)
        return await self.redact(user_id, now)

    async def redact(self, user_id: str, now: datetime) -> int:
        """Replace the payload of every delivery carrying ``user_id``'s data by its redacted
        form (personal_data); each write is conditional, so concurrent ones count once."""
        redacted_count = 0
        while (
            rows := await Delivery.filter(user_id=user_id).limit(BATCH).values_list("id", "payload")
        ):
            for delivery_id, payload in rows:
                redacted_count += await Delivery.filter(id=delivery_id, user_id=user_id).update(
                    payload=redacted(payload), user_id=None, updated_at=now
                )
        return redacted_count

    async def purge(self, created_before: datetime) -> int:
        """Delete the deliveries (their attempts with them) created before ``created_before``,
        whatever their status, a batch per statement; how many."""
        purged = 0
        while True:
            batch = Delivery.filter(created_at__lt=created_before).limit(BATCH).values("id")
            deleted: int = await Delivery.filter(id__in=Subquery(batch)).delete()
            purged += deleted
            if deleted < BATCH:
                return purged

    async def forget_erasures(self, erased_before: datetime) -> int:
        """Forget the deleted users remembered since before ``erased_before``; how many."""
        forgotten: int = await ErasedUser.filter(erased_at__lt=erased_before).delete()
        return forgotten

    async def claim_due(
        self, *, now: datetime, lease: timedelta, limit: int
    ) -> list[tuple[Delivery, Endpoint, UUID]]:
        """Take up to ``limit`` due deliveries of enabled endpoints, each the oldest pending one
        of its endpoint and subject (so that one resource's events arrive in order), for
        ``lease``.

        Returns each delivery with its endpoint and the claim that records its outcome.
        """
        async with in_transaction() as connection:
            query = (
                Delivery.annotate(waits=RawSQL(_WAITS_FOR_AN_EARLIER_ONE))
                .filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now, waits=False)
                # A disabled endpoint's deliveries wait for it to be enabled again.
                .filter(endpoint_id__in=Subquery(Endpoint.filter(enabled=True).values("id")))
                .order_by("next_attempt_at", "stream_sequence")
                .limit(limit)
                .using_db(connection)
            )
            if connection.capabilities.dialect == "postgres":
                query = query.select_for_update(skip_locked=True)
            claimed: list[tuple[Delivery, Endpoint, UUID]] = []
            for delivery in await query:
                claim = uuid4()
                await (
                    Delivery.filter(id=delivery.id)
                    .using_db(connection)
                    .update(claim=claim, next_attempt_at=now + lease)
                )
                endpoint = await Endpoint.get(id=delivery.endpoint_id, using_db=connection)
                claimed.append((delivery, endpoint, claim))
            return claimed

    async def record(
        self,
        delivery: Delivery,
        claim: UUID,
        outcome: Outcome,
        *,
        status: DeliveryStatus,
        next_attempt_at: datetime | None,
        failures: int,
        now: datetime,
    ) -> bool:
        """Store an attempt and the delivery's new state, if ``claim`` still holds it."""
        async with in_transaction() as connection:
            updated = (
                await Delivery.filter(id=delivery.id, claim=claim)
                .using_db(connection)
                .update(
                    status=status,
                    next_attempt_at=next_attempt_at,
                    failures=failures,
                    attempt_count=delivery.attempt_count + 1,
                    claim=None,
                    updated_at=now,
                )
            )
            if updated != 1:
                return False
            # The endpoint's failure clock (docs/api.md#delivery): a success stops it, the
            # first failure after one starts it.
            clock = Endpoint.filter(id=delivery.endpoint_id).using_db(connection)
            if outcome.succeeded:
                await clock.filter(failing_since__isnull=False).update(failing_since=None)
            else:
                await clock.filter(failing_since__isnull=True).update(
                    failing_since=outcome.attempted_at
                )
            await Attempt.create(
                id=uuid4(),
                delivery_id=delivery.id,
                attempted_at=outcome.attempted_at,
                status_code=outcome.status_code,
                error=outcome.error,
                duration_ms=outcome.duration_ms,
                using_db=connection,
            )
            return True
