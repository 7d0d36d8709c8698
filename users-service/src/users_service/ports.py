"""What the users, login and session rules need of storage and of each other, as small
interfaces, with the values and errors that cross them.

``users_service.repository``, ``users_service.session_repository`` and
``users_service.api_key_repository`` implement the stores on Tortoise; the unit tests, in
memory. ``SessionService`` is what ``UserSessions`` and
``SessionOpener`` name: the user rules reach the sessions through them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum, StrEnum
from typing import Any, Protocol, TypedDict
from uuid import UUID

from api_shared.auth import Principal, Role
from api_shared.mail.message import Mail
from users_service.models import AccountToken, ApiKey, PasswordResetRequest, Session, User

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


class UserSessions(Protocol):
    """What the user rules need of sessions (``SessionService``): the caller check, and
    ending them."""

    async def resolve_caller(self, principal: Principal) -> User: ...
    async def caller_standing(self, principal: Principal) -> Standing: ...
    async def end_all(self, user_id: UUID, *, keep: str | None = None) -> int: ...


class PasswordConfirmation(Protocol):
    """What needs the caller's password again (``UserService.confirm_password``): 401 when
    ``given`` is not it, 429 past the account's budget of wrong ones."""

    async def confirm_password(self, user: User, given: str, client: Client) -> None: ...


class SessionOpener(Protocol):
    """What login needs of sessions (``SessionService``)."""

    async def open(self, user: User, client: Client) -> SessionTokens: ...


@dataclass(frozen=True, slots=True)
class RecoveryPolicy:
    """How long tokens live and how many messages an hour may bring (the settings)."""

    verification_ttl: timedelta
    reset_ttl: timedelta
    verification_mails_per_hour: int  # per account
    reset_mails_per_hour: int  # per address, and per account


class NoExpiryFor(StrEnum):
    """Who may make an API key that never expires, or lives past the maximum lifetime
    (``API_KEY_NO_EXPIRY_FOR``): nobody (the default), admins, or every user."""

    NOBODY = "nobody"
    ADMINS = "admins"
    EVERYONE = "everyone"

    def allows(self, role: Role) -> bool:
        return self is NoExpiryFor.EVERYONE or (self is NoExpiryFor.ADMINS and role is Role.ADMIN)


@dataclass(frozen=True, slots=True)
class KeyPolicy:
    """What minting an API key needs, and how long a key may live (the settings)."""

    recent_authentication: timedelta  # a login or password confirmation within this
    max_lifetime: timedelta
    no_expiry_for: NoExpiryFor


class TokenPurpose(Enum):
    """What a mailed account token is for (``AccountToken.purpose``)."""

    EMAIL_VERIFICATION = "email-verification"
    PASSWORD_RESET = "password-reset"  # noqa: S105 - a purpose, not a secret


class AccountTokenStore(Protocol):
    """The queries of mailed tokens and of queued reset requests."""

    def atomic(self) -> AbstractAsyncContextManager[Any]:
        """One transaction around the calls made inside it."""
        ...

    async def add(
        self,
        *,
        token_hash: str,
        user_id: UUID,
        purpose: TokenPurpose,
        email: str,
        now: datetime,
        expires_at: datetime,
    ) -> None: ...
    async def live(
        self, token_hash: str, purpose: TokenPurpose, now: datetime
    ) -> AccountToken | None:
        """The token when it could be redeemed now (nothing is written)."""
        ...

    async def redeem(
        self, token_hash: str, purpose: TokenPurpose, now: datetime
    ) -> AccountToken | None:
        """Mark a live token used and return it; None when it is unknown, of another
        purpose, used or expired. Of concurrent redemptions of one token exactly one wins."""
        ...

    async def void(self, user_id: UUID, purpose: TokenPurpose, now: datetime) -> int:
        """Mark every unused token of ``user_id`` for ``purpose`` used; how many."""
        ...

    async def count_since(
        self,
        purpose: TokenPurpose,
        since: datetime,
        *,
        user_id: UUID | None = None,
        email: str | None = None,
    ) -> int:
        """Tokens of ``purpose`` made since ``since`` for the user, or for the address."""
        ...

    async def queue_reset(self, email: str, now: datetime) -> None: ...
    def pending_resets(
        self, limit: int
    ) -> AbstractAsyncContextManager[Sequence[PasswordResetRequest]]:
        """A transaction holding up to ``limit`` unhandled requests, oldest first, which no
        other replica takes meanwhile; what the block writes commits with their marks."""
        ...

    async def mark_handled(self, request_ids: Sequence[int], now: datetime) -> None: ...
    async def purge(self, now: datetime, *, handled_before: datetime) -> int:
        """Delete expired tokens and requests handled before ``handled_before``; how many."""
        ...


class MailBox(Protocol):
    """Where a message is written to be sent: the mail outbox, in the caller's transaction."""

    async def record(self, mail: Mail) -> str: ...


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
