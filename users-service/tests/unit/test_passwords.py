"""Password rules and Argon2id hashing off the event loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Literal, TypedDict

import pytest
from argon2 import PasswordHasher
from prometheus_client import CollectorRegistry

from api_shared.errors import UnavailableError
from api_shared.metrics import register_readings
from users_service.passwords import Passwords, Slots, check_password, password_slot_readings


class HasherCost(TypedDict):
    """PasswordHasher's cost parameters, typed for ``PasswordHasher(**cost)``."""

    time_cost: int
    memory_cost: int
    parallelism: int


CHEAP: HasherCost = {"time_cost": 1, "memory_cost": 8, "parallelism": 1}


class ThreadRecordingHasher(PasswordHasher):
    def __init__(self) -> None:
        super().__init__(**CHEAP)
        self.threads: set[int] = set()

    def hash(self, password: str | bytes, *, salt: bytes | None = None) -> str:
        self.threads.add(threading.get_ident())
        return super().hash(password, salt=salt)

    def verify(self, hash: str | bytes, password: str | bytes) -> Literal[True]:
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
    current = Passwords(PasswordHasher(**(CHEAP | {"memory_cost": 16})))

    assert current.needs_rehash(old)
    assert not current.needs_rehash(await current.hash("password-1"))


class GatedHasher(PasswordHasher):
    """Hashes only once the test opens the gate; counts how many run at once."""

    def __init__(self) -> None:
        super().__init__(**CHEAP)
        self.gate = threading.Event()
        self.running = 0
        self.most_at_once = 0
        self._lock = threading.Lock()

    def hash(self, password: str | bytes, *, salt: bytes | None = None) -> str:
        if not self.gate.is_set() and isinstance(password, str) and password.startswith("wait"):
            with self._lock:
                self.running += 1
                self.most_at_once = max(self.most_at_once, self.running)
            self.gate.wait(10)
            with self._lock:
                self.running -= 1
        return super().hash(password, salt=salt)


async def test_no_more_hashes_run_at_once_than_there_are_slots_and_the_rest_get_503() -> None:
    """Unit test: the slot rule itself, with a hasher held busy (no timing involved)."""
    hasher = GatedHasher()
    passwords = Passwords(hasher, slots=3, wait_s=0.05)

    busy = [asyncio.create_task(passwords.hash(f"wait-{n}-password")) for n in range(2)]
    await asyncio.sleep(0.01)
    with pytest.raises(UnavailableError) as refused:
        await passwords.hash("one-too-many")  # the third slot is kept for logins
    login = asyncio.create_task(passwords.verify(await_hash(hasher), "x", login=True))
    await asyncio.sleep(0.01)
    hasher.gate.set()
    await asyncio.gather(*busy)

    assert hasher.most_at_once == 2
    assert refused.value.headers == {"Retry-After": "1"}
    assert await login is False
    assert await passwords.verify(await passwords.hash("after-the-burst"), "after-the-burst")
    passwords.close()


def await_hash(hasher: PasswordHasher) -> str:
    return hasher.hash("a stored password")


async def test_a_sign_up_flood_leaves_logins_their_slot_and_their_turn_first() -> None:
    """Unit test: with every slot open to sign-ups busy, a login still runs at once; with
    the login slot busy too, the next slot freed goes to a waiting login, not a sign-up."""
    slots = Slots(3, reserved=1)
    for _ in range(2):
        await slots.acquire(login=False)
    await slots.acquire(login=True)  # the reserved one: no wait
    order: list[str] = []

    async def wait(name: str, login: bool) -> None:
        await slots.acquire(login=login)
        order.append(name)

    waiting = [
        asyncio.create_task(wait("sign-up", login=False)),
        asyncio.create_task(wait("login", login=True)),
    ]
    await asyncio.sleep(0)
    slots.release()
    await asyncio.sleep(0)
    assert order == ["login"]
    slots.release()  # free: the reserved slot, which a sign-up may not take
    await asyncio.sleep(0)
    assert order == ["login"]
    slots.release()
    await asyncio.gather(*waiting)

    assert order == ["login", "sign-up"]
    assert slots.free == 1


async def test_a_wait_given_up_takes_no_slot_even_when_granted_as_it_ends() -> None:
    slots = Slots(2, reserved=1)
    await slots.acquire(login=True)
    await slots.acquire(login=True)
    waiter = asyncio.create_task(slots.acquire(login=True))
    await asyncio.sleep(0)

    slots.release()  # granted: the waiter is resumed next...
    waiter.cancel()  # ...but gives up first
    with pytest.raises(asyncio.CancelledError):
        await waiter

    assert slots.free == 1


def test_reserved_slots_leave_one_for_everything_else() -> None:
    with pytest.raises(ValueError, match="at least one"):
        Slots(1, reserved=1)


async def test_a_caller_that_gives_up_keeps_its_slot_until_its_hash_is_done() -> None:
    """Unit test: a cancelled request (client gone) must not free memory still in use."""
    hasher = GatedHasher()
    passwords = Passwords(hasher, slots=1, wait_s=0.05)
    abandoned = asyncio.create_task(passwords.hash("wait-abandoned"))
    await asyncio.sleep(0.01)

    abandoned.cancel()
    with pytest.raises(UnavailableError):
        await passwords.hash("next-in-line")
    hasher.gate.set()
    await asyncio.sleep(0.1)

    assert await passwords.hash("once-it-is-done")
    passwords.close()


async def test_the_slot_metrics_count_busy_slots_waiting_callers_and_refusals() -> None:
    """Unit test: the metrics, read through a real registry, follow the slots' states."""
    hasher = GatedHasher()
    passwords = Passwords(hasher, slots=1, wait_s=0.2)
    registry = CollectorRegistry()
    register_readings(registry, password_slot_readings(passwords))

    def sample(name: str) -> float | None:
        return registry.get_sample_value(name)

    idle = {name: sample(name) for name in ("argon2_slots_in_use", "argon2_slots_waiting")}
    busy = asyncio.create_task(passwords.hash("wait-busy"))
    queued = asyncio.create_task(passwords.hash("queued"))
    await asyncio.sleep(0.01)
    while_busy = (sample("argon2_slots_in_use"), sample("argon2_slots_waiting"))
    with pytest.raises(UnavailableError):
        await queued  # the gate stays closed: no slot frees within wait_s
    after_refusal = (sample("argon2_slots_waiting"), sample("argon2_slot_refusals_total"))
    hasher.gate.set()
    await busy
    await asyncio.sleep(0.01)  # the slot is released by the executor's done callback

    assert sample("argon2_slots") == 1
    assert idle == {"argon2_slots_in_use": 0, "argon2_slots_waiting": 0}
    # Floats: the samples are floats, and mypy reads an int tuple as never equal to them.
    assert while_busy == (1.0, 1.0)
    assert after_refusal == (0.0, 1.0)
    assert sample("argon2_slots_in_use") == 0
    passwords.close()
