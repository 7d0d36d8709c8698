"""Which user events take an owner's standing away, and which of their endpoints that disables."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from webhooks_service.delivery.user_changes import UserChanges, affected, lost_standing
from webhooks_service.events import IncomingEvent
from webhooks_service.models import Audience, DisabledReason

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
        (_event("users.user.claimed", {"id": USER}), DisabledReason.ACCOUNT_CLAIMED),
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


@pytest.mark.parametrize(
    ("reason", "audience"),
    [
        (DisabledReason.OWNER_NOT_ADMIN, Audience.ALL),  # a customer may keep owner endpoints
        (DisabledReason.OWNER_SUSPENDED, None),  # every one of theirs
        (DisabledReason.OWNER_DELETED, None),
        (DisabledReason.ACCOUNT_CLAIMED, None),
    ],
)
def test_losing_admin_takes_all_endpoints_losing_the_account_takes_every_one(
    reason: DisabledReason, audience: Audience | None
) -> None:
    assert affected(reason) is audience


class Recorder:
    """Endpoint and delivery storage that records what it is asked to disable and erase."""

    def __init__(self) -> None:
        self.disabled: list[tuple[str, DisabledReason, Audience | None]] = []
        self.erased: list[str] = []

    async def disable_owned(
        self, owner_id: str, reason: DisabledReason, now: datetime, audience: Audience | None
    ) -> int:
        self.disabled.append((owner_id, reason, audience))
        return 1

    async def erase(self, user_id: str, now: datetime) -> int:
        self.erased.append(user_id)
        return 0


async def test_a_customers_profile_change_disables_only_their_all_endpoints() -> None:
    # users-service publishes every profile change with the user's role: a customer's says
    # "customer", which must leave their own owner endpoints alone.
    store: Any = Recorder()
    await UserChanges(store, store, lambda: datetime.now(UTC)).apply(
        _event("users.user.updated", {"id": USER, "name": "New name", "role": "customer"})
    )
    assert store.disabled == [(USER, DisabledReason.OWNER_NOT_ADMIN, Audience.ALL)]


async def test_a_deleted_user_loses_every_endpoint_and_their_data() -> None:
    store: Any = Recorder()
    await UserChanges(store, store, lambda: datetime.now(UTC)).apply(
        _event("users.user.deleted", {"id": USER})
    )
    assert store.disabled == [(USER, DisabledReason.OWNER_DELETED, None)]
    assert store.erased == [USER]


async def test_a_claimed_account_loses_every_endpoint_and_keeps_its_data() -> None:
    # Whoever held the account before the owner of its address took it back registered those
    # endpoints: none may receive the new holder's events. The account itself lives on.
    store: Any = Recorder()
    await UserChanges(store, store, lambda: datetime.now(UTC)).apply(
        _event("users.user.claimed", {"id": USER})
    )
    assert store.disabled == [(USER, DisabledReason.ACCOUNT_CLAIMED, None)]
    assert store.erased == []
