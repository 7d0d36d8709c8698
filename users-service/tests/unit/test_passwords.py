"""Password rules and Argon2id hashing off the event loop."""

from __future__ import annotations

import threading

import pytest
from argon2 import PasswordHasher

from users_service.passwords import Passwords, check_password

CHEAP = {"time_cost": 1, "memory_cost": 8, "parallelism": 1}


class ThreadRecordingHasher(PasswordHasher):
    def __init__(self) -> None:
        super().__init__(**CHEAP)
        self.threads: set[int] = set()

    def hash(self, password: str | bytes, *, salt: bytes | None = None) -> str:
        self.threads.add(threading.get_ident())
        return super().hash(password, salt=salt)

    def verify(self, hash: str | bytes, password: str | bytes) -> bool:
        self.threads.add(threading.get_ident())
        return super().verify(hash, password)


@pytest.mark.parametrize("length", [8, 64, 128])
def test_passwords_of_8_to_128_characters_are_allowed(length: int) -> None:
    assert check_password("p" * length) == "p" * length


@pytest.mark.parametrize("length", [0, 7, 129])
def test_shorter_or_longer_passwords_are_refused(length: int) -> None:
    with pytest.raises(ValueError, match="8 to 128"):
        check_password("p" * length)


async def test_hashing_and_verifying_run_off_the_event_loop_thread() -> None:
    hasher = ThreadRecordingHasher()
    passwords = Passwords(hasher)
    hasher.threads.clear()  # the dummy hash is made once, at construction

    password_hash = await passwords.hash("password-1")
    await passwords.verify(password_hash, "password-1")
    await passwords.verify_dummy("password-1")

    assert hasher.threads
    assert threading.get_ident() not in hasher.threads


async def test_the_hash_is_argon2id_and_verifies_only_the_right_password() -> None:
    passwords = Passwords(PasswordHasher(**CHEAP))

    password_hash = await passwords.hash("password-1")

    assert password_hash.startswith("$argon2id$")
    assert await passwords.verify(password_hash, "password-1")
    assert not await passwords.verify(password_hash, "password-2")


async def test_an_unreadable_stored_hash_verifies_nothing_and_needs_a_rehash() -> None:
    passwords = Passwords(PasswordHasher(**CHEAP))

    assert not await passwords.verify("not-a-hash", "password-1")
    assert passwords.needs_rehash("not-a-hash")


async def test_a_hash_made_with_other_parameters_needs_a_rehash() -> None:
    old = await Passwords(PasswordHasher(**CHEAP)).hash("password-1")
    current = Passwords(PasswordHasher(**{**CHEAP, "memory_cost": 16}))

    assert current.needs_rehash(old)
    assert not current.needs_rehash(await current.hash("password-1"))
