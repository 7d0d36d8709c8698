"""A subject's event history, read back from the outbox: what a receiver that missed some
events (a gap in ``sequence``) fetches to catch up.

Every committed row is history, published or not: a subject's rows commit one after another
in ``sequence`` order (``outbox.next_sequence`` locks the subject's counter until commit), so
the rows a reader sees are always 1..n with no hole, and the next commit adds n+1. The relay
purges published rows after ``EVENTS_HISTORY_RETENTION_S``: the history then starts later.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from api_shared.events.models import OutboxEvent


@dataclass(frozen=True, slots=True)
class History:
    """Some of a subject's events, in ``sequence`` order, each its CloudEvents document as
    published; ``has_more`` when later ones exist beyond the limit asked for."""

    events: Sequence[dict[str, Any]]
    has_more: bool

    @property
    def last_sequence(self) -> int | None:
        """The sequence of the last event here (where the next page starts), or None."""
        return int(self.events[-1]["sequence"]) if self.events else None


async def events_after(subject: str, *, after: int, limit: int) -> History:
    """``subject``'s retained events with a sequence above ``after``, at most ``limit``.

    One query on the (subject, sequence) unique index; one row more than asked says whether
    more follow.
    """
    rows = (
        await OutboxEvent.filter(subject=subject, sequence__gt=after)
        .order_by("sequence")
        .limit(limit + 1)
        .only("document")
    )
    events = [orjson.loads(row.document) for row in rows[:limit]]
    return History(events, has_more=len(rows) > limit)
