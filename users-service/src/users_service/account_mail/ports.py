"""What the account mail rules need of storage and of the mail outbox, as small interfaces,
with the values that cross them.

``users_service.account_mail.repository`` implements ``AccountTokenStore`` on Tortoise; the
mail outbox of ``api_shared.mail`` is the ``MailBox``. The users, sessions and API keys are
reached through their own ports (``UserStore``, ``UserSessions``, ``ApiKeyStore``).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from enum import Enum
from typing import Any, Protocol
from uuid import UUID

from api_shared.mail.message import Mail
from users_service.models import AccountToken, PasswordResetRequest


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
