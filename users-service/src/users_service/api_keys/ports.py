"""What the API key rules need of storage and of the users, as small interfaces, with the
values that cross them.

``users_service.api_keys.repository`` implements ``ApiKeyStore`` on Tortoise; the unit tests,
in memory. ``PasswordConfirmation`` is the users' ``UserService``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from uuid import UUID

from users_service.models import ApiKey, User
from users_service.sessions import Client


@dataclass(frozen=True, slots=True)
class NewApiKey:
    """A key about to be stored: its hash, never the key."""

    id: UUID
    user_id: UUID
    name: str
    prefix: str
    secret_hash: str
    scopes: str  # sorted, space-separated (models.ApiKey)
    created_at: datetime
    expires_at: datetime | None


class PasswordConfirmation(Protocol):
    """What needs the caller's password again (``UserService.confirm_password``): 401 when
    ``given`` is not it, 429 past the account's budget of wrong ones."""

    async def confirm_password(self, user: User, given: str, client: Client) -> None: ...


class ApiKeyStore(Protocol):
    """The API key queries the rules need."""

    async def add(self, key: NewApiKey, *, limit: int) -> ApiKey | None:
        """The stored key; None when its user holds ``limit`` keys already. Concurrent adds
        for one user count each other (the user's row is locked meanwhile)."""
        ...

    async def with_owner(self, secret_hash: str) -> tuple[ApiKey, User] | None:
        """The key with this hash and its owner, in one read (a join)."""
        ...

    async def get(self, key_id: UUID, user_id: UUID) -> ApiKey | None:
        """``user_id``'s key ``key_id``; None for another user's."""
        ...

    async def delete(self, key_id: UUID, user_id: UUID) -> bool: ...
    async def delete_all(self, user_id: UUID) -> int:
        """Delete every key of the user; how many."""
        ...

    async def page(
        self, user_id: UUID, *, order_by: str, limit: int, offset: int
    ) -> tuple[list[ApiKey], int]: ...
    async def touch(self, key_id: UUID, now: datetime, *, unless_since: datetime) -> None:
        """Set ``last_used_at`` to ``now`` unless it is ``unless_since`` or later (one
        conditional UPDATE: concurrent requests write it once)."""
        ...
