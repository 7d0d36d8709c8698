"""The rules of the event log (``GET /api/events``, docs/api.md#event-log): whose events a
caller sees, and how a list is asked for.

Every event the dispatcher takes in (and each one webhooks-service makes) is kept once
(``event_log.repository``), as delivered, naming the user whose personal data it carries
(``personal_data.concerned_user``): that user's history. A customer sees the events that
name them; an admin sees every event. Another user's event is 404, like one that does not
exist. A deleted user's events are redacted and name nobody any more: they leave that
user's history, and admins still see them, redacted.
"""

from __future__ import annotations

from api_shared.auth import Principal
from api_shared.errors import NotFoundError
from api_shared.paging import FilterParser, PageRequest
from webhooks_service.event_log.ports import EventLogStore
from webhooks_service.models import LoggedEvent

SORTS = ("time",)
DEFAULT_SORT = "-time"
MAX_FILTER_LENGTH = 255  # as the stored type and subject
NOT_FOUND = "No event has this id."


def _text(raw: str) -> str:
    if not 1 <= len(raw) <= MAX_FILTER_LENGTH:
        raise ValueError(f"must be 1 to {MAX_FILTER_LENGTH} characters")
    return raw


FILTERS: dict[str, FilterParser] = {"type": _text, "subject": _text}


def whose(caller: Principal) -> str | None:
    """Whose events ``caller`` sees: their own; None (everyone's) for an admin."""
    return None if caller.is_admin else caller.subject


class EventLogService:
    def __init__(self, log: EventLogStore) -> None:
        self.log = log

    async def list_events(
        self, caller: Principal, page: PageRequest
    ) -> tuple[list[LoggedEvent], int]:
        return await self.log.page(
            user_id=whose(caller),
            event_type=page.filters.get("type"),
            subject=page.filters.get("subject"),
            descending=page.sort.descending,
            limit=page.limit,
            offset=page.offset,
        )

    async def get(self, caller: Principal, event_id: str) -> LoggedEvent:
        """The event, if ``caller`` sees it; 404 otherwise, as for one that does not exist."""
        found = None
        if 1 <= len(event_id) <= MAX_FILTER_LENGTH:
            found = await self.log.get(event_id, user_id=whose(caller))
        if found is None:
            raise NotFoundError(NOT_FOUND)
        return found
