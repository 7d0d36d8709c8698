"""Tortoise queries for users; nothing else in the service touches the ORM."""

from __future__ import annotations

from typing import TypedDict
from uuid import UUID

from tortoise import timezone
from tortoise.exceptions import IntegrityError

from users_service.models import Role, User


class EmailInUseError(Exception):
    """The unique email index refused a write: another user has this email."""


class UserChanges(TypedDict, total=False):
    name: str
    email: str | None
    password_hash: str
    role: Role


class UserRepository:
    async def get(self, user_id: UUID) -> User | None:
        return await User.get_or_none(id=user_id)

    async def get_by_email(self, email: str) -> User | None:
        return await User.get_or_none(email=email)

    async def add(
        self, *, name: str, email: str | None, password_hash: str | None, role: Role
    ) -> User:
        try:
            return await User.create(name=name, email=email, password_hash=password_hash, role=role)
        except IntegrityError:
            # The index, not a prior lookup, decides: two concurrent sign-ups cannot both win.
            if email is None:
                raise
            raise EmailInUseError from None

    async def update(self, user: User, changes: UserChanges) -> bool:
        """Write ``changes`` to the user's row and to ``user``; False when the row is gone."""
        values = {**changes, "updated_at": timezone.now()}
        try:
            rows = await User.filter(id=user.id).update(**values)
        except IntegrityError:
            if "email" not in changes:
                raise
            raise EmailInUseError from None
        if rows:
            user.update_from_dict(values)
        return rows > 0

    async def delete(self, user_id: UUID) -> bool:
        """Delete the user; False when there was none."""
        return await User.filter(id=user_id).delete() > 0

    async def page(
        self, *, role: Role | None, order_by: str, limit: int, offset: int
    ) -> tuple[list[User], int]:
        """One page of users and the number of users matching the filter.

        ``order_by`` is a model field, ``-`` prefixed for descending; ``id`` breaks ties in
        the same direction, so that the composite indexes of the model serve the query.
        """
        query = User.all() if role is None else User.filter(role=role)
        tie_breaker = "-id" if order_by.startswith("-") else "id"
        users = await query.order_by(order_by, tie_breaker).offset(offset).limit(limit)
        return users, await query.count()
