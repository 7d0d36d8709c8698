"""Who may act on which user: oneself, or anyone for an admin (docs/api.md#users)."""

from __future__ import annotations

from uuid import UUID

from api_shared.auth import Role
from api_shared.errors import ForbiddenError, NotFoundError
from api_shared.ids import parse_id
from users_service.models import User
from users_service.sessions import Standing


def is_admin(caller: User | Standing) -> bool:
    return caller.role is Role.ADMIN


def require_lister(caller: Standing) -> None:
    if not is_admin(caller):
        raise ForbiddenError("Only an admin can list users.")


def accessible_id(caller: User, raw_id: str) -> UUID:
    """The id ``caller`` may act on: their own, or any for an admin.

    A customer naming another id is refused whether or not it exists, so that the answer
    does not reveal which ids exist; for an admin, a malformed id simply names nothing.
    """
    user_id = parse_id(raw_id)
    if is_admin(caller):
        if user_id is None:
            raise not_found()
        return user_id
    if user_id is None or user_id != caller.id:
        raise ForbiddenError("You may only access your own user.")
    return user_id


def not_found() -> NotFoundError:
    return NotFoundError("No user has this id.")
