"""Releasing a claim survives a database outage: the key is freed once the database is back."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from uuid import UUID, uuid4

from orders_service.idempotency import Claim, Idempotency
from orders_service.repository import IdempotencyRepository


class RecordsOfAFlakyDatabase(IdempotencyRepository):
    """Release fails ``down_for`` times (the database restarting), then works."""

    def __init__(self, down_for: int) -> None:
        self.down_for = down_for
        self.attempts = 0
        self.released: list[UUID] = []

    async def release(self, record_id: UUID, *, token: UUID) -> None:
        self.attempts += 1
        if self.attempts <= self.down_for:
            raise ConnectionRefusedError(111, "Connect call failed")
        self.released.append(record_id)


def _idempotency(records: IdempotencyRepository, attempts: int) -> Idempotency:
    return Idempotency(records, lambda: datetime.now(UTC), release_backoff_s=(0.01,) * attempts)


async def _settled(idempotency: Idempotency) -> None:
    await asyncio.gather(*idempotency._releasing)


async def test_a_claim_released_while_the_database_is_down_is_released_once_it_is_back() -> None:
    records = RecordsOfAFlakyDatabase(down_for=3)
    idempotency = _idempotency(records, attempts=10)
    claim = Claim(uuid4(), uuid4())

    await idempotency.release(claim)  # fails now, and does not raise over the request's error
    await _settled(idempotency)

    assert records.released == [claim.record_id]
    assert records.attempts == 4


async def test_releasing_gives_up_after_its_backoff_and_leaves_the_key_to_the_lease() -> None:
    records = RecordsOfAFlakyDatabase(down_for=100)
    idempotency = _idempotency(records, attempts=3)

    await idempotency.release(Claim(uuid4(), uuid4()))
    await _settled(idempotency)

    assert records.released == []
    assert records.attempts == 4
