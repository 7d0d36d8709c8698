"""Which user events take an owner's standing away (and so disable the endpoints they own)."""

from __future__ import annotations

import uuid

import orjson
import pytest

from webhooks_service.models import DisabledReason
from webhooks_service.ports import IncomingEvent
from webhooks_service.user_changes import lost_standing

USER = str(uuid.uuid4())


def _event(event_type: str, data: object) -> IncomingEvent:
    document = {"id": str(uuid.uuid4()), "type": event_type, "subject": USER, "data": data}
    return IncomingEvent(
        id=str(document["id"]),
        type=event_type,
        subject=USER,
        stream="USERS",
        stream_sequence=1,
        payload=orjson.dumps(document).decode(),
    )


def _user(role: str = "admin", active: bool = True) -> dict[str, object]:
    return {"id": USER, "name": "Ada", "role": role, "isActive": active}


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        (_event("users.user.updated", _user(role="customer")), DisabledReason.OWNER_NOT_ADMIN),
        (_event("users.user.updated", _user(role="auditor")), DisabledReason.OWNER_NOT_ADMIN),
        (_event("users.user.updated", _user(active=False)), DisabledReason.OWNER_SUSPENDED),
        (_event("users.user.updated", _user("customer", False)), DisabledReason.OWNER_SUSPENDED),
        (_event("users.user.deleted", {"id": USER}), DisabledReason.OWNER_DELETED),
        (_event("users.user.deleted", None), DisabledReason.OWNER_DELETED),
    ],
)
def test_an_owner_who_is_no_longer_an_active_admin_loses_their_endpoints(
    event: IncomingEvent, reason: DisabledReason
) -> None:
    assert lost_standing(event) is reason


@pytest.mark.parametrize(
    "event",
    [
        _event("users.user.updated", _user()),  # still an active admin (a new name, say)
        _event("users.user.updated", {"id": USER, "name": "Ada"}),  # says nothing of the role
        _event("users.user.updated", None),
        _event("users.user.updated", ["not", "an", "object"]),
        _event("users.user.created", _user(role="customer")),
        _event("orders.order.created", {"userId": USER}),
    ],
)
def test_other_events_take_no_standing_away(event: IncomingEvent) -> None:
    assert lost_standing(event) is None
