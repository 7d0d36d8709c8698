"""Tortoise queries for endpoints, deliveries, attempts and the event log: the
``EndpointStore``, ``DeliveryStore`` and ``EventLogStore`` of ``webhooks_service.ports``;
nothing else touches the ORM.

``claim_due`` is how dispatchers share the work: on PostgreSQL it locks the rows it takes
with ``FOR UPDATE SKIP LOCKED``, so concurrent dispatchers never take the same delivery.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

from tortoise.exceptions import IntegrityError
from tortoise.expressions import RawSQL, Subquery

from api_shared.transactions import after_commit, in_transaction
from webhooks_service.event_feed import LOG_CHANNEL, wake_local_feeds
from webhooks_service.models import (
    Attempt,
    Audience,
    Delivery,
    DeliveryStatus,
    DisabledReason,
    Endpoint,
    ErasedUser,
    LoggedEvent,
)
from webhooks_service.personal_data import redacted
from webhooks_service.ports import IncomingEvent, Outcome
from webhooks_service.secret_box import SealedSecretError, SecretBox

logger = logging.getLogger(__name__)

BATCH = 500  # rows per statement of the bulk work (redaction, purge)
# The key of the advisory lock that orders the event log's writers (``_append``): any
# constant no other lock of this database uses ("wh_log" in ASCII).
LOG_POSITION_LOCK = 0x77685F6C6F67
POSITION_ATTEMPTS = 5


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
        direction = "-" if descending else ""
        query = Endpoint.all()
        if owner_id is not None:
            query = query.filter(owner_id=owner_id)
        if audience is not None:
            query = query.filter(audience=audience)
        rows = (
            await query.order_by(f"{direction}{sort}", f"{direction}id").offset(offset).limit(limit)
        )
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
                await _pending(event, endpoint, payload, user_id, now)
            except IntegrityError:
                continue
            added += 1
        # The user may have been deleted while these were written (the USERS stream is read
        # apart from the others): ``erase`` may have missed them, so redact them here.
        if added and user_id is not None and await self.erased(user_id):
            await self.redact(user_id, now)
        return added

    async def queue(self, event: IncomingEvent, endpoint: Endpoint, now: datetime) -> Delivery:
        """A pending delivery of ``event`` (a test event: a new id, never seen before) to
        ``endpoint``, due now."""
        return await _pending(event, endpoint, event.payload, event.user_id, now)

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
        direction = "-" if descending else ""
        rows = (
            await query.order_by(f"{direction}created_at", f"{direction}stream_sequence")
            .offset(offset)
            .limit(limit)
        )
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


class EventLogRepository:
    async def record(self, event: IncomingEvent, now: datetime) -> bool:
        """Keep ``event`` once (its id is unique), at the log's next position: False when it
        was kept already. The event of a user who was deleted (``ErasedUser``) is kept
        redacted, naming nobody."""
        payload, user_id = event.payload, event.user_id
        if user_id is not None and await ErasedUser.exists(user_id=user_id):
            payload, user_id = redacted(payload), None
        for _ in range(POSITION_ATTEMPTS):
            try:
                await _append(event, payload, user_id, now)
            except IntegrityError:
                if await LoggedEvent.exists(event_id=event.id):
                    return False
                continue  # another writer took the position; take the next
            break
        else:
            raise IntegrityError(f"no free position in the event log for {event.id}")
        # The user may have been deleted meanwhile (the USERS stream is read apart from the
        # others): ``redact`` may have missed this one, so redact it here.
        if user_id is not None and await ErasedUser.exists(user_id=user_id):
            await self.redact(user_id)
        return True

    async def newest_position(self) -> int:
        """The position of the newest event logged; 0 while there is none."""
        newest = await LoggedEvent.all().order_by("-position").first().values_list("position")
        return int(newest[0]) if newest else 0

    async def after(
        self, position: int, *, user_id: str | None, event_type: str | None, limit: int
    ) -> list[LoggedEvent]:
        """The events logged after ``position``, oldest first: ``user_id``'s (every user's
        when None), of ``event_type`` when given."""
        query = LoggedEvent.filter(position__gt=position)
        if user_id is not None:
            query = query.filter(user_id=user_id)
        if event_type is not None:
            query = query.filter(type=event_type)
        return list(await query.order_by("position").limit(limit))

    async def redact(self, user_id: str) -> int:
        """Replace the payload of every logged event carrying ``user_id``'s data by its
        redacted form (personal_data), naming no user any more; each write is conditional,
        so concurrent ones count once."""
        redacted_count = 0
        while (
            rows := await LoggedEvent.filter(user_id=user_id)
            .limit(BATCH)
            .values_list("id", "payload")
        ):
            for row_id, payload in rows:
                redacted_count += await LoggedEvent.filter(id=row_id, user_id=user_id).update(
                    payload=redacted(payload), user_id=None
                )
        return redacted_count

    async def purge(self, recorded_before: datetime) -> int:
        """Delete the events recorded before ``recorded_before``, a batch per statement."""
        purged = 0
        while True:
            batch = LoggedEvent.filter(recorded_at__lt=recorded_before).limit(BATCH).values("id")
            deleted: int = await LoggedEvent.filter(id__in=Subquery(batch)).delete()
            purged += deleted
            if deleted < BATCH:
                return purged

    async def get(self, event_id: str, *, user_id: str | None) -> LoggedEvent | None:
        query = LoggedEvent.filter(event_id=event_id)
        if user_id is not None:
            query = query.filter(user_id=user_id)
        return await query.first()

    async def page(
        self,
        *,
        user_id: str | None,
        event_type: str | None,
        subject: str | None,
        descending: bool,
        limit: int,
        offset: int,
    ) -> tuple[list[LoggedEvent], int]:
        query = LoggedEvent.all()
        if user_id is not None:
            query = query.filter(user_id=user_id)
        if event_type is not None:
            query = query.filter(type=event_type)
        if subject is not None:
            query = query.filter(subject=subject)
        direction = "-" if descending else ""
        rows = (
            await query.order_by(f"{direction}time", f"{direction}id").offset(offset).limit(limit)
        )
        return list(rows), await query.count()


async def _append(event: IncomingEvent, payload: str, user_id: str | None, now: datetime) -> None:
    """Insert ``event``'s row at the position after the newest, in a transaction that wakes
    the event streams once it commits (webhooks_service.event_feed).

    On PostgreSQL a transaction-level advisory lock, taken before the newest position is
    read, makes the writers (every replica of the API and the dispatcher) take positions one
    at a time, in commit order: a reader that sees position n sees every position below it
    that will ever exist. That is what lets a stream resume after an event by its position
    without a gap. On SQLite the transaction holds the file's write lock from its BEGIN
    (``api_shared.sqlite``), so the writers take positions one at a time as well; a clash on
    the position (a client that began deferred) is an IntegrityError, and ``record`` takes
    the next.
    """
    async with in_transaction() as connection:
        if connection.capabilities.dialect == "postgres":
            await connection.execute_query(
                "SELECT pg_advisory_xact_lock($1), pg_notify($2, '')",
                [LOG_POSITION_LOCK, LOG_CHANNEL],
            )
        else:
            after_commit(wake_local_feeds)
        newest = await LoggedEvent.all().order_by("-position").first().values_list("position")
        await LoggedEvent.create(
            id=uuid4(),
            position=(int(newest[0]) if newest else 0) + 1,
            event_id=event.id,
            type=event.type,
            subject=event.subject,
            user_id=user_id,
            stream=event.stream,
            stream_sequence=event.stream_sequence,
            time=event.time or now,
            payload=payload,
            recorded_at=now,
        )


async def _pending(
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
