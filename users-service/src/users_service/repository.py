"""Tortoise queries for users; nothing else in the service touches the ORM."""

from __future__ import annotations

from uuid import UUID

from users_service.models import User


class UserRepository:
    async def get(self, user_id: UUID) -> User | None:
        return await User.get_or_none(id=user_id)

    async def create(self, *, name: str) -> User:
        return await User.create(name=name)
