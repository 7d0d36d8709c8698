"""Tortoise queries for the event log: the ``EventLogStore`` and ``EventLogReader`` of
``event_log.ports``.

Each event takes the log's next position (``_append``), in commit order, so that a stream
resumes after an event by its position without a gap.
"""

from __future__ import annotations

from datetime import datetime
from uuid import uuid4

from tortoise.exceptions import IntegrityError
from tortoise.expressions import Subquery

from api_shared.paging import page_order
from api_shared.transactions import after_commit, in_transaction
from webhooks_service.event_log.feed import LOG_CHANNEL, wake_local_feeds
from webhooks_service.events import IncomingEvent
from webhooks_service.models import ErasedUser, LoggedEvent
from webhooks_service.personal_data import redacted

BATCH = 500  # rows per statement of the bulk work (redaction, purge)
# The key of the advisory lock that orders the event log's writers (``_append``): any
# constant no other lock of this database uses ("wh_log" in ASCII).
LOG_POSITION_LOCK = 0x77685F6C6F67
POSITION_ATTEMPTS = 5


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
        ordering = page_order("time", descending=descending)
        rows = await query.order_by(*ordering).offset(offset).limit(limit)
        return list(rows), await query.count()


async def _append(event: IncomingEvent, payload: str, user_id: str | None, now: datetime) -> None:
    """Insert ``event``'s row at the position after the newest, in a transaction that wakes
    the event streams once it commits (``event_log.feed``).

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
