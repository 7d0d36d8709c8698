"""What the user and login rules need of storage, of the sessions and of account mail, as
small interfaces, with the values and errors that cross them.

``users_service.users.repository`` implements ``UserStore`` on Tortoise; the unit tests, in
memory. ``SessionService`` is what ``UserSessions`` and ``SessionOpener`` name, and
``AccountMail`` what ``AccountMessages`` names: the user rules reach them through these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, TypedDict
from uuid import UUID

from api_shared.auth import Principal, Role
from users_service.models import User
from users_service.sessions import Client, SessionTokens, Standing, UserReader

UserRow = Mapping[str, Any]
"""A user's public fields by name (``repository.PUBLIC_FIELDS``), valued as asyncpg gives them."""


class EmailInUseError(Exception):
    """The unique email index refused a write: another user has this email."""


class UserChanges(TypedDict, total=False):
    name: str
    email: str | None
    password_hash: str
    role: Role
    is_active: bool
    email_verified: bool


class UserStore(UserReader, Protocol):
    """The user queries the rules need."""

    async def get_by_email(self, email: str) -> User | None: ...
    async def add(
        self, *, name: str, email: str | None, password_hash: str | None, role: Role
    ) -> User:
        """The new user; EmailInUseError when another one has ``email``."""
        ...

    async def update(self, user: User, changes: UserChanges) -> bool:
        """Write ``changes`` to the row and to ``user``; False when the row is gone;
        EmailInUseError when another user has the new email."""
        ...

    async def claim(self, user: User, changes: UserChanges) -> bool:
        """``update``, for the account the owner of its address takes back with a password
        reset: ``users.user.claimed`` is recorded too, before ``users.user.updated``."""
        ...

    async def delete(self, user_id: UUID) -> bool: ...
    async def page(
        self, *, role: Role | None, is_active: bool | None, order_by: str, limit: int, offset: int
    ) -> tuple[Sequence[UserRow], int]: ...


class UserSessions(Protocol):
    """What the user rules need of sessions (``SessionService``): the caller check, and
    ending them."""

    async def resolve_caller(self, principal: Principal) -> User: ...
    async def caller_standing(self, principal: Principal) -> Standing: ...
    async def end_all(self, user_id: UUID, *, keep: str | None = None) -> int: ...


class SessionOpener(Protocol):
    """What login needs of sessions (``SessionService``)."""

    async def open(self, user: User, client: Client) -> SessionTokens: ...


class Transactional(Protocol):
    def atomic(self) -> AbstractAsyncContextManager[Any]:
        """One transaction around the calls made inside it."""
        ...


class AccountMessages(Protocol):
    """What the user rules need of account mail (``users_service.account_mail.AccountMail``):
    the messages a change causes, written in the change's transaction (``tokens.atomic``)."""

    @property
    def tokens(self) -> Transactional: ...

    async def send_verification(self, user: User) -> None: ...
    async def email_changed(self, user: User) -> None: ...
    async def void_resets(self, user_id: UUID) -> None: ...
    async def send_password_notice(
        self, user: User, *, revoked_keys: int | None = None
    ) -> None: ...
