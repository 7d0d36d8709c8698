"""The rules of the users resource, independent of HTTP."""

from __future__ import annotations

from uuid import UUID

from api_shared.errors import NotFoundError
from users_service.models import User
from users_service.repository import UserRepository
from users_service.schemas import UserCreate


class UserService:
    def __init__(self, users: UserRepository) -> None:
        self.users = users

    async def sign_up(self, data: UserCreate) -> User:
        return await self.users.create(name=data.name)

    async def get(self, user_id: str) -> User:
        user = await self.users.get(_as_uuid(user_id))
        if user is None:
            raise NotFoundError("No user has this id.")
        return user


def _as_uuid(raw: str) -> UUID:
    """A path id that is not a UUID names nothing (CONTRACT §2): 404, never 400."""
    try:
        return UUID(raw)
    except ValueError:
        raise NotFoundError("No user has this id.") from None
