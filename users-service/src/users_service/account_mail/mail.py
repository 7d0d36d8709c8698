"""Account mail: a token made and its message written to the mail outbox, in the
transaction of the change that causes it (``users_service.account_mail.services`` says
which messages, and why).

Tokens are 256 random bits, mailed once and stored as their SHA-256, bound to the address
they were sent to and to one purpose, single use, short-lived.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from datetime import datetime
from uuid import UUID

from users_service.account_mail.ports import AccountTokenStore, MailBox, TokenPurpose
from users_service.account_mail.templates import (
    ActiveKey,
    Links,
    password_notice_mail,
    password_reset_mail,
    verification_mail,
)
from users_service.api_keys import MAX_KEYS_PER_USER, ApiKeyStore
from users_service.models import User
from users_service.policies import RecoveryPolicy
from users_service.sessions import utc_now


def new_account_token() -> tuple[str, str]:
    """A fresh token (256 random bits, URL-safe) and what is stored of it."""
    token = secrets.token_urlsafe(32)
    return token, account_token_hash(token)


def account_token_hash(token: str) -> str:
    """SHA-256: the token has 256 bits of entropy, a slow hash would protect nothing."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class AccountMail:
    """Makes a token and writes its message to the outbox, in the caller's transaction."""

    def __init__(
        self,
        tokens: AccountTokenStore,
        mailbox: MailBox,
        links: Links,
        policy: RecoveryPolicy,
        *,
        keys: ApiKeyStore,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.tokens = tokens
        self.mailbox = mailbox
        self.links = links
        self.policy = policy
        self.keys = keys  # listed in the password notice
        self.clock = clock

    async def send_verification(self, user: User) -> None:
        """Mail ``user`` a link that verifies their current email (none: nothing to send)."""
        if user.email is None:
            return
        token = await self._token(user, user.email, TokenPurpose.EMAIL_VERIFICATION)
        ttl = self.policy.verification_ttl
        await self.mailbox.record(
            verification_mail(
                to=user.email,
                link=self.links.verify(token),
                valid_hours=ttl.total_seconds() / 3600,
            )
        )

    async def send_reset(self, user: User, email: str) -> None:
        """Mail a reset link to ``email`` (the user's); earlier reset links stop working."""
        await self.tokens.void(user.id, TokenPurpose.PASSWORD_RESET, self.clock())
        token = await self._token(user, email, TokenPurpose.PASSWORD_RESET)
        await self.mailbox.record(
            password_reset_mail(
                to=email,
                link=self.links.reset(token),
                valid_minutes=self.policy.reset_ttl.total_seconds() / 60,
            )
        )

    async def void_resets(self, user_id: UUID) -> None:
        """A password changed: the reset links already mailed stop working."""
        await self.tokens.void(user_id, TokenPurpose.PASSWORD_RESET, self.clock())

    async def email_changed(self, user: User) -> None:
        """The account's email changed (or went): every token mailed before is void for good,
        whatever address it went to, and the new address gets its own verification link."""
        now = self.clock()
        for purpose in TokenPurpose:
            await self.tokens.void(user.id, purpose, now)
        await self.send_verification(user)

    async def send_password_notice(self, user: User, *, revoked_keys: int | None = None) -> None:
        """Tell the account's verified address that its password is new, and what still
        works (the module's docstring); ``revoked_keys``: how many a claim revoked."""
        if user.email is None or not user.email_verified:
            return
        keys: list[ActiveKey] = []
        if revoked_keys is None:
            stored, _ = await self.keys.page(
                user.id, order_by="-created_at", limit=MAX_KEYS_PER_USER, offset=0
            )
            keys = [
                ActiveKey(
                    name=key.name,
                    prefix=key.prefix,
                    scopes=tuple(key.scopes.split()),
                    last_used_at=key.last_used_at,
                    expires_at=key.expires_at,
                )
                for key in stored
            ]
        await self.mailbox.record(
            password_notice_mail(
                to=user.email, name=user.name, keys=keys, revoked_keys=revoked_keys
            )
        )

    async def _token(self, user: User, email: str, purpose: TokenPurpose) -> str:
        now = self.clock()
        ttl = (
            self.policy.verification_ttl
            if purpose is TokenPurpose.EMAIL_VERIFICATION
            else self.policy.reset_ttl
        )
        token, token_hash = new_account_token()
        await self.tokens.add(
            token_hash=token_hash,
            user_id=user.id,
            purpose=purpose,
            email=email,
            now=now,
            expires_at=now + ttl,
        )
        return token
