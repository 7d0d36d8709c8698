"""Password login, independent of HTTP: one answer for every failure, in comparable time
(docs/api.md#authentication). A login opens a session (``users_service.sessions``)."""

from __future__ import annotations

from api_shared.errors import InvalidCredentialsError
from users_service.budgets import Throttle, account_key
from users_service.emails import normalize_email
from users_service.passwords import PASSWORD_MAX_LENGTH, Passwords
from users_service.sessions import Client, SessionTokens, refuse_suspended
from users_service.users.ports import SessionOpener, UserStore


class AuthService:
    """Password login: one answer for every failure, in comparable time; failed logins
    charged per account and per (account, address) before any hashing."""

    def __init__(
        self, users: UserStore, passwords: Passwords, sessions: SessionOpener, throttle: Throttle
    ) -> None:
        self.users = users
        self.passwords = passwords
        self.sessions = sessions
        self.throttle = throttle  # the budgets of ``users_service.budgets``

    async def log_in(self, email: str, password: str, client: Client) -> SessionTokens:
        if len(password) > PASSWORD_MAX_LENGTH:
            raise InvalidCredentialsError()  # no account can have it: skip the hashing
        try:
            normalized = normalize_email(email)
        except ValueError:
            normalized = None  # no account can have a malformed address
        user = await self.users.get_by_email(normalized) if normalized is not None else None
        # Every spelling users-service reads as this account is this account's budget; an
        # unknown email is charged alike, so that a 429 tells nothing of who has an account.
        charges = (
            self.throttle.failed_login(
                account_key(user.id if user else None, normalized), client.address
            )
            if normalized is not None
            else []
        )
        async with self.throttle.guessing(charges):
            if user is None or user.password_hash is None:
                await self.passwords.verify_dummy(password)
                raise InvalidCredentialsError()
            if not await self.passwords.verify(user.password_hash, password, login=True):
                raise InvalidCredentialsError()
        if self.passwords.needs_rehash(user.password_hash):
            # The cost parameters were raised since this hash was made: upgrade it now.
            await self.users.update(user, {"password_hash": await self.passwords.hash(password)})
        refuse_suspended(user)  # only now: the answer must not tell who has an account
        return await self.sessions.open(user, client)
