"""api_shared.transactions on a real database: a BEGIN that fails gives everything back;
``after_commit`` callbacks run after a commit only.

The fault is injected where it happens in production (PostgreSQL restarting under a
service): the connection is taken, then BEGIN fails. Everything else is real: Tortoise,
its pool (PostgreSQL) or its one connection's lock (SQLite).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tortoise import connections
from tortoise.backends.base.client import TransactionalDBClient

from api_shared.events.models import EventSequence
from api_shared.transactions import after_commit, in_transaction
from api_testkit.databases import orm_on_temporary_database

# Only a guard against the hang this module is about: a healthy run takes milliseconds.
HANG_GUARD_S = 5.0


class ConnectionCutError(ConnectionError):
    """What the injected fault raises at BEGIN."""


@pytest.fixture
async def database() -> AsyncIterator[None]:
    # One per test: a failed test may leave its database unusable (a lock never released).
    async with orm_on_temporary_database("transactions", ["api_shared.events.models"]):
        yield


@pytest.fixture
def begin_fails(monkeypatch: pytest.MonkeyPatch, database: None) -> None:
    """The next BEGIN on the default connection fails, as on a connection cut under it."""
    context: Any = connections.get("default")._in_transaction()
    wrapper = type(getattr(context, "client", None) or context.connection)
    begin = wrapper.begin

    async def cut(self: TransactionalDBClient) -> None:
        monkeypatch.setattr(wrapper, "begin", begin)
        raise ConnectionCutError("connection was closed in the middle of operation")

    monkeypatch.setattr(wrapper, "begin", cut)


def connections_in_use() -> int:
    """PostgreSQL: the pool's lent connections; SQLite: 1 while its lock is taken."""
    client: Any = connections.get("default")
    pool = getattr(client, "_pool", None)
    if pool is not None:
        return int(pool.get_size() - pool.get_idle_size())
    return int(client._lock.locked())


async def test_a_failed_begin_lends_no_connection_and_leaves_the_task_unpinned(
    begin_fails: None,
) -> None:
    with pytest.raises(ConnectionCutError):
        async with in_transaction():
            raise AssertionError("the block must not run when BEGIN failed")

    assert connections_in_use() == 0
    assert not isinstance(connections.get("default"), TransactionalDBClient)


async def test_after_a_failed_begin_the_same_task_commits_its_next_transaction(
    begin_fails: None,
) -> None:
    with pytest.raises(ConnectionCutError):
        async with in_transaction():
            raise AssertionError("the block must not run when BEGIN failed")

    async with asyncio.timeout(HANG_GUARD_S), in_transaction() as transaction:
        await EventSequence.create(subject="order-1", last_sequence=1, using_db=transaction)
    assert await EventSequence.filter(subject="order-1").count() == 1
    assert connections_in_use() == 0


async def test_an_error_in_the_block_rolls_back_and_propagates(database: None) -> None:
    async def create_then_fail() -> None:
        async with in_transaction():
            await EventSequence.create(subject="order-2", last_sequence=1)
            raise LookupError("the caller's own error")

    with pytest.raises(LookupError):
        await create_then_fail()

    assert not await EventSequence.filter(subject="order-2").exists()
    assert connections_in_use() == 0


async def test_after_commit_runs_once_the_outermost_transaction_committed(database: None) -> None:
    seen: list[str] = []

    def saw(what: str) -> None:
        seen.append(what)

    async with in_transaction():
        await EventSequence.create(subject="order-3", last_sequence=1)
        after_commit(lambda: saw("outer"))
        async with in_transaction():  # a savepoint: its commit is not the commit
            after_commit(lambda: saw("inner"))
        assert seen == []

    assert seen == ["outer", "inner"]
    assert await EventSequence.filter(subject="order-3").exists()


async def test_after_commit_never_runs_when_the_transaction_rolls_back(database: None) -> None:
    seen: list[str] = []

    async def create_then_fail() -> None:
        async with in_transaction():
            await EventSequence.create(subject="order-4", last_sequence=1)
            after_commit(lambda: seen.append("committed"))
            raise LookupError("the change failed")

    with pytest.raises(LookupError):
        await create_then_fail()
    async with in_transaction():
        pass  # a later transaction does not inherit the rolled-back one's callbacks

    assert seen == []
    assert not await EventSequence.filter(subject="order-4").exists()


def test_after_commit_outside_a_transaction_runs_at_once() -> None:
    seen: list[str] = []

    after_commit(lambda: seen.append("now"))

    assert seen == ["now"]
