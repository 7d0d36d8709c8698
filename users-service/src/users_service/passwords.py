"""Password rules and Argon2id hashing, in a bounded number of slots off the event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from prometheus_client.registry import Collector

from api_shared.errors import UnavailableError
from api_shared.metrics import Reading, Readings

PASSWORD_MIN_LENGTH = 8
PASSWORD_MAX_LENGTH = 128
BUSY_RETRY_AFTER_S = 1
BUSY_MESSAGE = "Too many password operations at once; try again shortly."

T = TypeVar("T")


def check_password(password: str) -> str:
    """``password`` when its length is allowed, else ValueError (docs/api.md#users)."""
    if not PASSWORD_MIN_LENGTH <= len(password) <= PASSWORD_MAX_LENGTH:
        raise ValueError(f"must be {PASSWORD_MIN_LENGTH} to {PASSWORD_MAX_LENGTH} characters")
    return password


class Slots:
    """``size`` slots, of which ``reserved`` serve logins alone; logins are served first.

    A flood of sign-ups and password changes (from many addresses, so that no per-address
    limit stops it) must degrade sign-ups, not lock everyone out: it can hold every slot
    but the reserved ones, and a login waiting for a slot gets the next one freed.
    """

    def __init__(self, size: int, reserved: int) -> None:
        if not 0 <= reserved < size:
            raise ValueError("reserved slots must leave at least one for everything else")
        self.size, self.reserved = size, reserved
        self.free = size
        self._logins: deque[asyncio.Future[None]] = deque()
        self._others: deque[asyncio.Future[None]] = deque()

    async def acquire(self, *, login: bool) -> None:
        """Take a slot, waiting for one (cancel the wait to give up)."""
        queue = self._logins if login else self._others
        if not queue and self._may_take(login) and (login or not self._logins):
            self.free -= 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(waiter)
        try:
            await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.release()  # granted just as the wait ended: not used, so given back
            else:
                with contextlib.suppress(ValueError):
                    queue.remove(waiter)
            raise

    def release(self) -> None:
        self.free += 1
        while self._logins and self._may_take(login=True):
            self._grant(self._logins.popleft())
        while self._others and self._may_take(login=False):
            self._grant(self._others.popleft())

    def _may_take(self, login: bool) -> bool:
        return self.free > (0 if login else self.reserved)

    def _grant(self, waiter: asyncio.Future[None]) -> None:
        if not waiter.done():
            self.free -= 1
            waiter.set_result(None)


class Passwords:
    """Hashes and verifies passwords, at most ``slots`` at a time, in worker threads.

    Argon2 is deliberately slow (tens of milliseconds) and each hash holds its memory cost
    (64 MiB by default) for that time: on the event loop it would stall every other request,
    and unbounded (the default executor is sized from the host's cores, not the container's
    limit) a burst of sign-ups runs the process out of memory. So every hash and verification
    takes one of ``slots``, in an executor of exactly that many threads; a caller that cannot
    get a slot within ``wait_s`` gets 503 UNAVAILABLE with Retry-After instead of queueing.
    With two slots or more, one is kept for logins, which are also served first (``Slots``).
    A resource of the context, measured by ``password_slot_readings``.
    """

    def __init__(self, hasher: PasswordHasher, *, slots: int = 1, wait_s: float = 0.5) -> None:
        if slots < 1:
            raise ValueError("slots must be at least 1")
        self._hasher = hasher
        self.slots = slots
        self._wait_s = wait_s
        self._free = Slots(slots, reserved=1 if slots >= 2 else 0)
        self._executor = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="argon2")
        # What the metrics report (password_slot_readings): counted here, where it happens.
        self.in_use = 0
        self.waiting = 0
        self.refused = 0
        # Verified against when the email is unknown, so that a login for an unknown email
        # costs what a wrong password costs and timing does not reveal who has an account.
        self._dummy_hash = hasher.hash("not anyone's password")

    async def hash(self, password: str) -> str:
        return await self._in_slot(self._hasher.hash, password, login=False)

    async def verify(self, password_hash: str, password: str, *, login: bool = False) -> bool:
        """Whether ``password`` matches; ``login``: a login's, served before other work."""
        return await self._in_slot(self._verify, password_hash, password, login=login)

    async def verify_dummy(self, password: str) -> None:
        """Spend the time of one verification, for a login whose user does not exist."""
        await self.verify(self._dummy_hash, password, login=True)

    def needs_rehash(self, password_hash: str) -> bool:
        """Whether ``password_hash`` was made with other parameters than today's."""
        try:
            return self._hasher.check_needs_rehash(password_hash)
        except InvalidHashError:
            return True

    def collectors(self) -> Sequence[Collector]:
        return (Readings(password_slot_readings(self)),)

    async def start(self) -> None:
        """Nothing to open: the executor starts its threads with the first hash."""

    async def stop(self) -> None:
        self.close()

    def close(self) -> None:
        """Let the worker threads go once the work already running is done."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def _in_slot(self, work: Callable[..., T], *args: str, login: bool) -> T:
        self.waiting += 1
        try:
            async with asyncio.timeout(self._wait_s):
                await self._free.acquire(login=login)
        except TimeoutError:
            self.refused += 1
            raise UnavailableError(BUSY_MESSAGE, retry_after_s=BUSY_RETRY_AFTER_S) from None
        finally:
            self.waiting -= 1
        try:
            running = asyncio.get_running_loop().run_in_executor(self._executor, work, *args)
        except BaseException:
            self._free.release()
            raise
        self.in_use += 1
        # The slot is free when the thread is done, not when the caller stops waiting (a
        # client that hangs up cancels its handler): the memory is held until then.
        running.add_done_callback(self._release)
        return await asyncio.shield(running)

    def _release(self, _: object) -> None:
        self.in_use -= 1
        self._free.release()

    def _verify(self, password_hash: str, password: str) -> bool:
        try:
            return self._hasher.verify(password_hash, password)
        except (VerificationError, InvalidHashError):
            return False


def password_slot_readings(passwords: Passwords) -> list[Reading]:
    """The Argon2 slots as metrics: how many, how many busy, callers waiting, refusals."""
    return [
        Reading(
            "argon2_slots",
            "Argon2 slots: hashes run at once at most (ARGON2_SLOTS, else the memory budget).",
            lambda: passwords.slots,
        ),
        Reading(
            "argon2_slots_in_use",
            "Argon2 slots hashing or verifying right now.",
            lambda: passwords.in_use,
        ),
        Reading(
            "argon2_slots_waiting",
            "Callers waiting for a free Argon2 slot.",
            lambda: passwords.waiting,
        ),
        Reading(
            "argon2_slot_refusals",
            "Password operations refused with 503 UNAVAILABLE: no slot freed in time.",
            lambda: passwords.refused,
            kind="counter",
        ),
    ]
