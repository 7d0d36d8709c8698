"""Which endpoints an event goes to: those whose ``eventTypes`` select it and whose audience
may have it (docs/api.md#webhooks).

An ``all`` endpoint (an admin's) receives every event of its types. An ``owner`` endpoint
receives only the events about its owner's own resources: those whose personal data is the
owner's (``IncomingEvent.user_id``, ``personal_data.concerned_user``: an order's
``data.userId``, a user event's ``subject``). An event that concerns nobody (a user's
deletion, an order without a user) reaches no ``owner`` endpoint: it could be anyone's.
"""

from __future__ import annotations

from collections.abc import Iterable

from webhooks_service.endpoints.event_types import matches
from webhooks_service.events import IncomingEvent
from webhooks_service.models import Audience, Endpoint


def may_receive(endpoint: Endpoint, event: IncomingEvent) -> bool:
    """Whether ``endpoint``'s audience takes ``event`` (whatever its types)."""
    if endpoint.audience is Audience.ALL:
        return True
    return event.user_id is not None and event.user_id == endpoint.owner_id


def receivers(endpoints: Iterable[Endpoint], event: IncomingEvent) -> list[Endpoint]:
    """The endpoints among ``endpoints`` that want ``event`` and may receive it."""
    return [e for e in endpoints if matches(e.event_types, event.type) and may_receive(e, event)]
