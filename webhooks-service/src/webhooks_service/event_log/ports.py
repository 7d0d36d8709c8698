"""What the event log's rules, the parts that write it (the dispatcher's, the endpoint API's
test events) and its live feed need of its storage, as small interfaces.

``event_log.repository`` implements them on Tortoise.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from webhooks_service.events import IncomingEvent
from webhooks_service.models import LoggedEvent


class EventLogStore(Protocol):
    """The event log (``GET /api/events``): every event taken in or made here, once."""

    async def record(self, event: IncomingEvent, now: datetime) -> bool:
        """Keep ``event`` (redacted when its user was deleted); False when it was kept
        already (a redelivery: nothing changes)."""
        ...

    async def redact(self, user_id: str) -> int:
        """Redact every logged event carrying ``user_id``'s data, which then names no user;
        how many."""
        ...

    async def purge(self, recorded_before: datetime) -> int:
        """Delete the events recorded before ``recorded_before``; how many."""
        ...

    async def get(self, event_id: str, *, user_id: str | None) -> LoggedEvent | None:
        """The event ``event_id``; only if it is ``user_id``'s, unless None (an admin)."""
        ...

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
        """One page of events (only ``user_id``'s unless None; of ``event_type`` and
        ``subject`` when given) by ``time``, and how many there are."""
        ...


class EventLogReader(Protocol):
    """What the feed and the streams read of the log: by position, in order."""

    async def newest_position(self) -> int: ...

    async def after(
        self, position: int, *, user_id: str | None, event_type: str | None, limit: int
    ) -> list[LoggedEvent]: ...
