"""The events webhooks-service makes itself, about an endpoint: never published to JetStream,
queued straight to the endpoints that get them (docs/api.md#webhooks).

- ``webhooks.endpoint.tested``: asked for by ``POST /api/webhooks/{id}/test-events``, for
  that endpoint alone;
- ``webhooks.endpoint.disabled``: the dispatcher's upkeep disabled an endpoint that kept
  failing; for its owner's other endpoints (``maintenance``).

Their deliveries record a stream of their own and sequence 0, so that none waits for
another (a subject's deliveries go out in sequence order).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from api_shared.events.envelope import CloudEvent
from webhooks_service.events import IncomingEvent

SOURCE = "/webhooks-service"
TEST_EVENT_TYPE = "webhooks.endpoint.tested"
DISABLED_EVENT_TYPE = "webhooks.endpoint.disabled"
TEST_STREAM = "TEST"
NOTICE_STREAM = "NOTICE"


def endpoint_event(
    event_type: str,
    endpoint_id: str,
    data: dict[str, Any],
    now: datetime,
    *,
    stream: str,
    user_id: str | None,
) -> IncomingEvent:
    """A new CloudEvent about the endpoint ``endpoint_id`` (its subject), made now; ``user_id``
    is the user it concerns (their deletion redacts it; an ``owner`` endpoint of theirs may
    receive it)."""
    event = CloudEvent(source=SOURCE, type=event_type, subject=endpoint_id, data=data, time=now)
    return IncomingEvent(
        id=event.id,
        type=event.type,
        subject=event.subject,
        stream=stream,
        stream_sequence=0,
        payload=event.to_json().decode(),
        user_id=user_id,
        time=now,
    )
