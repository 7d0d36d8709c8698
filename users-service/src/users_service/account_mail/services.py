"""Email verification and password reset, independent of HTTP: the rules of
docs/api.md#email-verification-and-password-reset.

Tokens are 256 random bits, mailed once and stored as their SHA-256, bound to the address
they were sent to and to one purpose, single use, short-lived. Every message is written to
the mail outbox in the transaction of the change that causes it (``MailBox``): a sign-up that
rolls back sends nothing, one that commits loses nothing, whatever the mail server does.

A reset request is answered 202 after one insert, whoever the address belongs to; the
``ResetRequestWorker`` handles the queue afterwards (sends, or silently drops: unknown
address, suspended account, hourly limit spent). Redeeming a reset token proves the mailbox:
the account belongs to whoever reads that address, so the reset also marks the address
verified and ends every session — which is how the owner of an address takes back an
account someone else opened with it without verifying. Such a claim leaves nothing of the
previous holder, in the transaction of the password write (a crash in between leaves them
nothing either): every API key revoked, the name they chose replaced by the address's local
part (the one name the owner surely recognises, and no text of the holder's in the owner's
mail or on an admin's list), and ``users.user.claimed`` recorded, on which webhooks-service
disables the account's endpoints and ends its event streams.

A password set, by a reset or a change, mails the account's verified address a notice of
what still works: the API keys (a password change by the owner does not end them, nor the
webhook endpoints: the owner's integrations must not break on a routine change), with the
one action that revokes them all. An address that is not verified gets no notice: its
mailbox is not known to be the account holder's, and the notice would carry their text.

An email change voids for good every token mailed before it: otherwise a link to an earlier
address would work again once the account takes that address back (A → B → A).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta

from api_shared.background import BackgroundTask
from api_shared.errors import InvalidStateError, RateLimitedError, ValidationFailedError
from users_service.account_mail.mail import AccountMail, account_token_hash
from users_service.account_mail.ports import TokenPurpose
from users_service.budgets import Throttle
from users_service.models import AccountToken, PasswordResetRequest, User
from users_service.passwords import Passwords
from users_service.sessions import Client, refuse_suspended
from users_service.users import UserChanges, UserSessions, UserStore

logger = logging.getLogger(__name__)

HOUR = timedelta(hours=1)
# Handled reset requests are kept this long (to look into), then purged.
HANDLED_REQUEST_RETENTION = timedelta(days=1)
INVALID_TOKEN = "is invalid, used or expired; ask for a new message"  # noqa: S105 - a message


class EmailVerificationService:
    """Verifying an address with its token, and mailing a new token on request."""

    def __init__(self, mail: AccountMail, users: UserStore) -> None:
        self.mail = mail
        self.users = users

    async def verify(self, token: str) -> User:
        """Mark the token's address verified; 400 for a token that cannot be redeemed."""
        tokens = self.mail.tokens
        async with tokens.atomic():
            found = await tokens.redeem(
                account_token_hash(token), TokenPurpose.EMAIL_VERIFICATION, self.mail.clock()
            )
            user = await owner_of(self.users, found)
            if not user.email_verified:
                await self.users.update(user, {"email_verified": True})
            return user

    async def resend(self, caller: User) -> None:
        """Mail the caller a new link; 409 when there is nothing to verify, 429 past the
        hourly limit (which the sign-up's own message counts towards)."""
        if caller.email is None:
            raise InvalidStateError("This account has no email address to verify.")
        if caller.email_verified:
            raise InvalidStateError("This email address is already verified.")
        tokens, policy = self.mail.tokens, self.mail.policy
        async with tokens.atomic():
            sent = await tokens.count_since(
                TokenPurpose.EMAIL_VERIFICATION, self.mail.clock() - HOUR, user_id=caller.id
            )
            if sent >= policy.verification_mails_per_hour:
                raise RateLimitedError(
                    int(HOUR.total_seconds()),
                    f"At most {policy.verification_mails_per_hour} verification messages an "
                    "hour; use the last one received.",
                )
            await self.mail.send_verification(caller)


class PasswordResetService:
    """Queuing reset requests, handling the queue, and setting a password with a token."""

    def __init__(
        self,
        mail: AccountMail,
        users: UserStore,
        sessions: UserSessions,
        passwords: Passwords,
        throttle: Throttle,
    ) -> None:
        self.mail = mail
        self.users = users
        self.keys = mail.keys  # revoked by a claim
        self.sessions = sessions
        self.passwords = passwords
        self.throttle = throttle
        self.queued = asyncio.Event()  # set by ``request``: the worker need not wait its turn

    async def request(self, email: str) -> None:
        """Queue a reset for ``email`` (normalised); the same single insert whoever has it."""
        await self.mail.tokens.queue_reset(email, self.mail.clock())
        self.queued.set()

    async def handle_pending(self, batch_size: int = 50) -> int:
        """Handle up to ``batch_size`` queued requests in one transaction; how many."""
        tokens = self.mail.tokens
        async with tokens.pending_resets(batch_size) as requests:
            for request in requests:
                await self._handle(request)
            await tokens.mark_handled([request.id for request in requests], self.mail.clock())
        return len(requests)

    async def reset(self, token: str, password: str, client: Client) -> None:
        """Set the password of the token's account and end every session of it; when its
        address was not verified, the reset is a claim (the module's docstring).

        The token is looked at before any hashing (a wrong one costs no Argon2 slot), and
        redeemed in the transaction that writes the password, so that it works once.
        """
        tokens, clock = self.mail.tokens, self.mail.clock
        token_hash = account_token_hash(token)
        await self.throttle.credential_work(client.address)
        user = await owner_of(
            self.users, await tokens.live(token_hash, TokenPurpose.PASSWORD_RESET, clock())
        )
        refuse_suspended(user)
        password_hash = await self.passwords.hash(password)
        async with tokens.atomic():
            user = await owner_of(
                self.users, await tokens.redeem(token_hash, TokenPurpose.PASSWORD_RESET, clock())
            )
            refuse_suspended(user)
            changes: UserChanges = {"password_hash": password_hash}
            revoked_keys: int | None = None
            if user.email_verified:
                await self.users.update(user, changes)
            else:  # whoever reads the mailbox owns it: proven too, and the account is theirs
                changes["email_verified"] = True
                changes["name"] = claimed_name(user.email)
                if not await self.users.claim(user, changes):
                    raise _invalid_token()  # deleted meanwhile
                revoked_keys = await self.keys.delete_all(user.id)
            await self.mail.void_resets(user.id)
            ended = await self.sessions.end_all(user.id)
            await self.mail.send_password_notice(user, revoked_keys=revoked_keys)
        if revoked_keys is not None:
            logger.warning(
                "account claimed by the owner of its address",
                extra={
                    "event": "account_claimed",
                    "user_id": str(user.id),
                    "api_keys_revoked": revoked_keys,
                    "sessions_ended": ended,
                },
            )

    async def _handle(self, request: PasswordResetRequest) -> None:
        user = await self.users.get_by_email(request.email)
        if user is None or not user.is_active:
            return  # nothing to tell anyone: the 202 was the same
        policy, since = self.mail.policy, self.mail.clock() - HOUR
        tokens = self.mail.tokens
        for recent in (
            await tokens.count_since(TokenPurpose.PASSWORD_RESET, since, email=request.email),
            await tokens.count_since(TokenPurpose.PASSWORD_RESET, since, user_id=user.id),
        ):
            if recent >= policy.reset_mails_per_hour:
                logger.info(
                    "password reset request dropped: hourly limit",
                    extra={"user_id": str(user.id), "limit": policy.reset_mails_per_hour},
                )
                return
        await self.mail.send_reset(user, request.email)


class ResetRequestWorker(BackgroundTask):
    """Handles queued reset requests while the server runs: at once when this process
    queued one, else every ``interval_s`` (another replica's, or one left by a restart)."""

    def __init__(self, resets: PasswordResetService, *, interval_s: float, purge_every_s: float):
        super().__init__("password-reset-requests", self._run_forever)
        self.resets = resets
        self.interval_s = interval_s
        self.purge_every_s = purge_every_s
        self.handled = 0  # a metric
        self.failures = 0

    async def _run_forever(self) -> None:
        loop = asyncio.get_running_loop()
        next_purge = loop.time()
        while True:
            try:
                self.resets.queued.clear()
                handled = await self.resets.handle_pending()
                self.handled += handled
                if loop.time() >= next_purge:
                    now = self.resets.mail.clock()
                    await self.resets.mail.tokens.purge(
                        now, handled_before=now - HANDLED_REQUEST_RETENTION
                    )
                    next_purge = loop.time() + self.purge_every_s
                if handled:
                    continue  # more may be waiting
            except Exception:
                self.failures += 1
                logger.warning("password reset requests could not be handled", exc_info=True)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.resets.queued.wait(), self.interval_s)


def claimed_name(email: str | None) -> str:
    """A claimed account's new name: its address's local part (at most 64 characters, none
    of them a control or bidi character: email-validator refuses those)."""
    return (email or "").rpartition("@")[0] or "Account holder"


async def owner_of(users: UserStore, token: AccountToken | None) -> User:
    """The token's user, while their email is still the one it was sent to; else 400."""
    user = await users.get(token.user_id) if token is not None else None
    if token is None or user is None or user.email != token.email:
        raise _invalid_token()
    return user


def _invalid_token() -> ValidationFailedError:
    return ValidationFailedError(f"token {INVALID_TOKEN}", fields={"token": INVALID_TOKEN})
