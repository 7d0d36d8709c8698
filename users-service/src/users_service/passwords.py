"""Password rules and Argon2id hashing, run off the event loop."""

from __future__ import annotations

import asyncio

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

PASSWORD_MIN_LENGTH = 8
PASSWORD_MAX_LENGTH = 128


def check_password(password: str) -> str:
    """``password`` when its length is allowed, else ValueError (docs/api.md#users)."""
    if not PASSWORD_MIN_LENGTH <= len(password) <= PASSWORD_MAX_LENGTH:
        raise ValueError(f"must be {PASSWORD_MIN_LENGTH} to {PASSWORD_MAX_LENGTH} characters")
    return password


class Passwords:
    """Hashes and verifies passwords; every call runs in a worker thread.

    Argon2 is deliberately slow (tens of milliseconds): on the event loop it would stall
    every other request of the process.
    """

    def __init__(self, hasher: PasswordHasher) -> None:
        self._hasher = hasher
        # Verified against when the email is unknown, so that a login for an unknown email
        # costs what a wrong password costs and timing does not reveal who has an account.
        self._dummy_hash = hasher.hash("not anyone's password")

    async def hash(self, password: str) -> str:
        return await asyncio.to_thread(self._hasher.hash, password)

    async def verify(self, password_hash: str, password: str) -> bool:
        return await asyncio.to_thread(self._verify, password_hash, password)

    async def verify_dummy(self, password: str) -> None:
        """Spend the time of one verification, for a login whose user does not exist."""
        await self.verify(self._dummy_hash, password)

    def needs_rehash(self, password_hash: str) -> bool:
        """Whether ``password_hash`` was made with other parameters than today's."""
        try:
            return self._hasher.check_needs_rehash(password_hash)
        except InvalidHashError:
            return True

    def _verify(self, password_hash: str, password: str) -> bool:
        try:
            return self._hasher.verify(password_hash, password)
        except (VerificationError, InvalidHashError):
            return False
