"""What the session rules need of storage and of the users, as small interfaces, with the
values that cross them.

``users_service.sessions.repository`` implements ``SessionStore`` on Tortoise; the unit tests,
in memory. ``UserReader`` is the users' store (``users_service.users.repository``); ``Login``
is the users' ``AuthService``, which the token endpoint calls.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Protocol
from uuid import UUID

from api_shared.auth import Role
from users_service.models import Session, User


class Spend(Enum):
    """What presenting a refresh token did."""

    SPENT = "spent"  # it was live: it is spent now, by this request
    ALREADY_SPENT = "already spent"  # reuse: it was exchanged before
    UNKNOWN = "unknown"  # no such token in that session, or expired


@dataclass(frozen=True, slots=True)
class Standing:
    """What the caller check reads of a token's session and of its user: enough for a route
    that decides by the caller's role alone."""

    user_id: UUID
    role: Role
    is_active: bool
    revoked_at: datetime | None
    expires_at: datetime

    @classmethod
    def of(cls, session: Session, user: User) -> Standing:
        return cls(user.id, user.role, user.is_active, session.revoked_at, session.expires_at)


@dataclass(frozen=True, slots=True)
class Opening:
    """A session that a login starts, with its first refresh token (by its hash)."""

    session_id: UUID
    user_id: UUID
    token_hash: str
    now: datetime
    token_expires_at: datetime
    expires_at: datetime
    user_agent: str | None
    address: str | None


def is_live(session: Session | Standing, now: datetime) -> bool:
    return session.revoked_at is None and session.expires_at > now


@dataclass(frozen=True, slots=True)
class Client:
    """Where a login comes from, as the request tells (shown in the sessions list)."""

    user_agent: str | None = None
    address: str | None = None


@dataclass(frozen=True, slots=True)
class SessionTokens:
    """What a login or a refresh hands out."""

    access_token: str
    expires_in: int
    refresh_token: str
    refresh_expires_in: int


class UserReader(Protocol):
    async def get(self, user_id: UUID) -> User | None: ...


class Login(Protocol):
    """Password login (``users_service.users.AuthService``): what the token endpoint calls."""

    async def log_in(self, email: str, password: str, client: Client) -> SessionTokens: ...


class SessionStore(Protocol):
    """The session and refresh-token queries the rules need."""

    def atomic(self) -> AbstractAsyncContextManager[Any]:
        """One transaction around the calls made inside it."""
        ...

    async def open(self, opening: Opening) -> None: ...
    async def spend(self, token_hash: str, session_id: UUID, now: datetime) -> Spend:
        """Spend a live token: of concurrent spends of one token exactly one is SPENT."""
        ...

    async def renew(
        self, session_id: UUID, token_hash: str, now: datetime, token_expires_at: datetime
    ) -> Session | None: ...
    async def with_user(self, session_id: UUID) -> tuple[Session, User] | None: ...
    async def standing(self, session_id: UUID) -> Standing | None: ...
    async def session_of_token(self, token_hash: str, session_id: UUID) -> Session | None: ...
    async def holds(self, token_hash: str, session_id: UUID) -> bool: ...
    async def revoke(
        self, session_id: UUID, now: datetime, *, user_id: UUID | None = None
    ) -> bool: ...
    async def revoke_all(
        self, user_id: UUID, now: datetime, *, keep: UUID | None = None
    ) -> int: ...
    async def page(
        self, user_id: UUID, now: datetime, *, order_by: str, limit: int, offset: int
    ) -> tuple[list[Session], int]: ...
    async def purge(self, now: datetime) -> int: ...
