"""Which endpoints an event goes to: its types, and the endpoint's audience (an ``owner``
endpoint only the events about its owner)."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import orjson
import pytest

from webhooks_service.delivery.intake import incoming_event
from webhooks_service.endpoints.audience import may_receive, receivers
from webhooks_service.events import IncomingEvent
from webhooks_service.models import Audience, Endpoint

NOW = datetime(2026, 11, 28, tzinfo=UTC)
ALICE, BOB = str(uuid4()), str(uuid4())


def _endpoint(owner: str | None, audience: Audience, types: list[str] | None = None) -> Endpoint:
    return Endpoint(
        id=uuid4(),
        url="https://example.com/hook",
        event_types=types or ["*"],
        description="",
        secret="sealed",
        owner_id=owner,
        audience=audience,
        created_at=NOW,
        updated_at=NOW,
    )


def _event(event_type: str, subject: str, data: object) -> IncomingEvent:
    document = {"id": str(uuid4()), "type": event_type, "subject": subject, "data": data}
    return incoming_event(event_type.split(".")[0].upper(), 1, orjson.dumps(document))


ALICES_ORDER = _event("orders.order.created", "order-a", {"userId": ALICE})
BOBS_ORDER = _event("orders.order.created", "order-b", {"userId": BOB})


@pytest.mark.parametrize(
    ("event", "owner", "received"),
    [
        (ALICES_ORDER, ALICE, True),
        (BOBS_ORDER, ALICE, False),
        (_event("users.user.updated", ALICE, {"name": "Alice"}), ALICE, True),
        (_event("users.user.updated", BOB, {"name": "Bob"}), ALICE, False),
        # A deletion concerns nobody (personal_data): no owner endpoint gets it.
        (_event("users.user.deleted", ALICE, {"id": ALICE}), ALICE, False),
        (_event("orders.order.created", "order-x", {}), ALICE, False),  # nobody's order
        (ALICES_ORDER, None, False),  # an owner endpoint without an owner gets nothing
    ],
)
def test_an_owner_endpoint_receives_only_the_events_about_its_owner(
    event: IncomingEvent, owner: str | None, received: bool
) -> None:
    assert may_receive(_endpoint(owner, Audience.OWNER), event) is received


@pytest.mark.parametrize("event", [ALICES_ORDER, BOBS_ORDER, _event("users.user.deleted", BOB, {})])
def test_an_all_endpoint_receives_everyones_events(event: IncomingEvent) -> None:
    assert may_receive(_endpoint(ALICE, Audience.ALL), event) is True


def test_receivers_want_the_type_and_may_have_the_event() -> None:
    alices = _endpoint(ALICE, Audience.OWNER)
    bobs = _endpoint(BOB, Audience.OWNER)
    admins = _endpoint(str(uuid4()), Audience.ALL)
    alices_users_only = _endpoint(ALICE, Audience.OWNER, ["users.*"])
    endpoints = [alices, bobs, admins, alices_users_only]
    assert receivers(endpoints, ALICES_ORDER) == [alices, admins]
    assert receivers(endpoints, BOBS_ORDER) == [bobs, admins]
