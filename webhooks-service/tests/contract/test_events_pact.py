"""The webhooks dispatcher's contracts with the events it takes from users-service and
orders-service: what its real intake (``incoming_event``) and the user changes it applies
(``lost_standing``) read of each.

- every event: ``id``, ``type`` and ``subject`` (the delivery's keys);
- a user's update: ``role`` and ``isActive`` (an owner who lost admin loses their endpoints);
- a user's deletion: its subject (their deliveries are redacted);
- an account claimed by the owner of its address: its subject (the endpoints of whoever
  held it before are disabled);
- an order's event: ``data.userId``, whose personal data the delivery carries.

The pacts written must equal the committed ``contracts/pacts/webhooks-dispatcher-*-events
.json``; each producer's suite checks them against the events its real outbox writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pact import Pact, match

from api_testkit.pacts import (
    ORDERS_SERVICE_EVENTS,
    USERS_SERVICE_EVENTS,
    WEBHOOKS_DISPATCHER,
    cloud_event,
    message_body,
    new_pact,
    written_pact,
)
from webhooks_service.delivery.intake import incoming_event
from webhooks_service.delivery.user_changes import lost_standing
from webhooks_service.events import IncomingEvent
from webhooks_service.models import DisabledReason

USERS_SOURCE, ORDERS_SOURCE = "/users-service", "/orders-service"
USER = "2d4f6a8c-1e3b-4d5f-8a7c-9e0b1c2d3e4f"
ORDER = "8e6c4a2f-0d1b-4f3e-9c5a-7b8d9e0f1a2b"


def received(pact: Pact, stream: str) -> list[IncomingEvent]:
    """The pact's messages as the intake decodes them from ``stream``."""
    events: list[IncomingEvent] = []

    def receive(body: str | bytes | None, metadata: dict[str, Any]) -> None:
        events.append(incoming_event(stream, 1, message_body(body)))

    pact.verify(receive, "Async")
    assert events, "no message was verified"
    return events


def user_event(description: str, state: str, event_type: str, data: dict[str, object]) -> Pact:
    pact = new_pact(WEBHOOKS_DISPATCHER, USERS_SERVICE_EVENTS)
    (
        pact.upon_receiving(description, "Async")
        .given(state)
        .with_body(cloud_event(USERS_SOURCE, event_type, USER, data), "application/json")
    )
    return pact


def test_the_dispatcher_reads_the_user_events_it_acts_on(tmp_path: Path) -> None:
    created = user_event("users.user.created", "a customer signed up", "users.user.created", {})
    (event,) = received(created, "USERS")
    assert (event.type, event.subject, event.user_id) == ("users.user.created", USER, USER)

    demoted = user_event(
        "users.user.updated: an admin became a customer",
        "an admin was made a customer",
        "users.user.updated",
        {"role": "customer", "isActive": True},
    )
    (event,) = received(demoted, "USERS")
    assert lost_standing(event) is DisabledReason.OWNER_NOT_ADMIN

    suspended = user_event(
        "users.user.updated: an admin was suspended",
        "an admin was suspended",
        "users.user.updated",
        {"role": "admin", "isActive": False},
    )
    (event,) = received(suspended, "USERS")
    assert lost_standing(event) is DisabledReason.OWNER_SUSPENDED

    deleted = user_event(
        "users.user.deleted", "a user was deleted", "users.user.deleted", {"id": match.uuid(USER)}
    )
    (event,) = received(deleted, "USERS")
    assert lost_standing(event) is DisabledReason.OWNER_DELETED
    assert (event.subject, event.user_id) == (USER, None)  # concerns nobody's data

    claimed = user_event(
        "users.user.claimed",
        "the owner of an account's address took it back",
        "users.user.claimed",
        {"id": match.uuid(USER)},
    )
    (event,) = received(claimed, "USERS")
    assert lost_standing(event) is DisabledReason.ACCOUNT_CLAIMED
    assert event.subject == USER

    written_pact(tmp_path, created, demoted, suspended, deleted, claimed)


def test_the_dispatcher_reads_whose_order_an_order_event_is(tmp_path: Path) -> None:
    pact = new_pact(WEBHOOKS_DISPATCHER, ORDERS_SERVICE_EVENTS)
    (
        pact.upon_receiving("orders.order.created", "Async")
        .given("a customer placed an order")
        .with_body(
            cloud_event(ORDERS_SOURCE, "orders.order.created", ORDER, {"userId": match.uuid(USER)}),
            "application/json",
        )
    )
    (event,) = received(pact, "ORDERS")
    assert (event.type, event.subject, event.user_id) == ("orders.order.created", ORDER, USER)
    written_pact(tmp_path, pact)
