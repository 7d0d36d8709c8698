"""orders-service's contract with users-service's events: ``users.user.deleted``, which its
real handler (``user_deleted_handler``) turns into forgetting that user's orders.

The pact written must equal the committed ``contracts/pacts/orders-service-users-service
-events.json``; users-service's suite checks it against the events its real outbox writes.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from pact import match

from api_shared.events.envelope import CloudEvent
from api_testkit.pacts import (
    ORDERS_SERVICE,
    USERS_SERVICE_EVENTS,
    cloud_event,
    message_body,
    new_pact,
    written_pact,
)
from orders_service.events import USER_DELETED_TYPE, USERS_SOURCE, user_deleted_handler
from orders_service.services import Forgotten

DELETED_USER = "7c2e9b14-5d3a-4f61-8b0c-9a1d2e3f4a5b"


async def test_orders_service_forgets_the_user_a_deletion_event_names(tmp_path: Path) -> None:
    pact = new_pact(ORDERS_SERVICE, USERS_SERVICE_EVENTS)
    (
        pact.upon_receiving(USER_DELETED_TYPE, "Async")
        .given("a user was deleted")
        .with_body(
            cloud_event(
                USERS_SOURCE, USER_DELETED_TYPE, DELETED_USER, {"id": match.uuid(DELETED_USER)}
            ),
            "application/json",
        )
    )
    forgotten: list[uuid.UUID] = []

    async def forget_user(user_id: uuid.UUID) -> Forgotten:
        forgotten.append(user_id)
        return Forgotten(deleted=0, anonymised=0)

    handle = user_deleted_handler(forget_user)
    events: list[CloudEvent] = []

    def receive(body: str | bytes | None, metadata: dict[str, Any]) -> None:
        events.append(CloudEvent.from_json(message_body(body)))

    pact.verify(receive, "Async")
    for event in events:
        await handle(event)
    assert forgotten == [uuid.UUID(DELETED_USER)]
    written_pact(tmp_path, pact)
