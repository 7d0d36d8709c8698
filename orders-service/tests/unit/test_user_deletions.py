"""The handler of users' deletions: a real users.user.deleted forgets that user; a message of
another kind on the same subject forgets no one."""

from __future__ import annotations

import uuid

import pytest

from api_shared.events.envelope import CloudEvent
from orders_service.events import user_deleted_handler
from orders_service.services import Forgotten


class Forgetting:
    def __init__(self) -> None:
        self.forgotten: list[uuid.UUID] = []

    async def __call__(self, user_id: uuid.UUID) -> Forgotten:
        self.forgotten.append(user_id)
        return Forgotten(deleted=1, anonymised=0)


async def test_users_services_deletion_forgets_that_user() -> None:
    forgetting, user_id = Forgetting(), uuid.uuid4()
    event = CloudEvent(
        source="/users-service", type="users.user.deleted", subject=str(user_id), data={}
    )

    await user_deleted_handler(forgetting)(event)

    assert forgetting.forgotten == [user_id]


@pytest.mark.parametrize(
    ("source", "event_type"),
    [
        ("/users-service", "users.user.created"),  # an event re-delivered onto the subject
        ("/orders-service", "users.user.deleted"),
        ("/webhooks-dispatcher", "users.user.deleted"),
    ],
)
async def test_anything_else_on_the_subject_forgets_no_one(source: str, event_type: str) -> None:
    forgetting = Forgetting()
    event = CloudEvent(source=source, type=event_type, subject=str(uuid.uuid4()), data={})

    await user_deleted_handler(forgetting)(event)

    assert forgetting.forgotten == []
