"""The events users-service publishes, through the shared outbox: a user created, deleted.

``users.user.deleted`` carries only the id: the stream keeps events for days, and a deleted
user's name and email must not outlive them there.
"""

from __future__ import annotations

from uuid import UUID

from api_shared.events.outbox import Outbox
from users_service.models import User
from users_service.schemas import UserPublic

SOURCE = "/users-service"
CREATED = "users.user.created"
DELETED = "users.user.deleted"


class UserEvents:
    """Records a user's events; call inside the transaction of the change."""

    def __init__(self, outbox: Outbox | None = None) -> None:
        self.outbox = outbox or Outbox(SOURCE)

    async def created(self, user: User) -> None:
        await self.outbox.record(CREATED, str(user.id), UserPublic.model_validate(user).wire())

    async def deleted(self, user_id: UUID) -> None:
        await self.outbox.record(DELETED, str(user_id), {"id": str(user_id)})
