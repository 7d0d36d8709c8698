"""Several connections writing one SQLite file at once, as the services' processes do
(webhooks-service and its dispatcher, users-service replicas): every write transaction
waits for the others, none fails with "database is locked" (api_shared.sqlite).

Each writer is the client ``tortoise_config`` gives a service, on a connection of its own
(another process would hold one the same way), running what the webhooks event log does: read
the newest position, insert the next. A deferred BEGIN let a reader's write meet another's
commit half-way, which SQLite refuses at once; ``BEGIN IMMEDIATE`` queues the writers.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.backends.base.config_generator import expand_db_url
from tortoise.context import TortoiseContext

from api_shared.database import tortoise_config
from api_shared.error_handler import to_api_error
from api_shared.errors import UnavailableError

WRITERS = 6
TRANSACTIONS_EACH = 40
# Only a guard against a hang; a healthy run takes well under a second.
HANG_GUARD_S = 60.0


@asynccontextmanager
async def writers(url: str, count: int) -> AsyncIterator[list[BaseDBAsyncClient]]:
    """``count`` clients of the file, as ``tortoise_config`` has Tortoise build a service's,
    each on a connection of its own; closed afterwards."""
    info: Any = tortoise_config(url, "api_shared.nothing", "api_shared.nothing")
    info = info["connections"]["default"]
    if isinstance(info, str):
        info = expand_db_url(info)
    engine = importlib.import_module(info["engine"])
    clients: list[BaseDBAsyncClient] = [
        engine.client_class(connection_name=f"writer-{n}", **info["credentials"])
        for n in range(count)
    ]
    try:
        async with TortoiseContext():  # where a transaction makes its connection current
            yield clients
    finally:
        for client in clients:
            await client.close()


@pytest.fixture
async def database(tmp_path: Path) -> str:
    url = f"sqlite://{tmp_path / 'writers.sqlite3'}"
    async with writers(url, 1) as (setup,):
        await setup.execute_script("CREATE TABLE log (position INTEGER PRIMARY KEY, writer TEXT)")
    return url


async def append(client: BaseDBAsyncClient, writer: str) -> None:
    """Read the newest position, then insert the next one: a read, then a write."""
    async with client._in_transaction() as transaction:
        rows = await transaction.execute_query_dict("SELECT max(position) AS newest FROM log")
        newest = rows[0]["newest"] or 0
        await transaction.execute_insert(
            "INSERT INTO log (position, writer) VALUES (?, ?)", [newest + 1, writer]
        )


async def test_concurrent_write_transactions_on_one_file_all_commit(database: str) -> None:
    async def write_many(client: BaseDBAsyncClient, name: str) -> None:
        for _ in range(TRANSACTIONS_EACH):
            await append(client, name)

    async with writers(database, WRITERS) as clients, asyncio.timeout(HANG_GUARD_S):
        await asyncio.gather(*(write_many(client, f"w{n}") for n, client in enumerate(clients)))
        rows = await clients[0].execute_query_dict("SELECT position, writer FROM log")

    total = WRITERS * TRANSACTIONS_EACH
    assert sorted(row["position"] for row in rows) == list(range(1, total + 1))
    assert {row["writer"] for row in rows} == {f"w{n}" for n in range(WRITERS)}


async def test_a_write_transaction_takes_the_lock_at_begin_and_the_next_one_waits(
    database: str,
) -> None:
    async with writers(database, 2) as (first, second):
        async with first._in_transaction() as transaction:
            await transaction.execute_query_dict("SELECT max(position) FROM log")
            waiting = asyncio.create_task(append(second, "second"))
            # Time for the second writer to run as far as it can: to its BEGIN, no further.
            await asyncio.sleep(0.2)
            assert not waiting.done()
            await transaction.execute_insert(
                "INSERT INTO log (position, writer) VALUES (1, 'first')", []
            )
        async with asyncio.timeout(HANG_GUARD_S):
            await waiting
        rows = await first.execute_query_dict("SELECT position, writer FROM log")

    assert [(row["position"], row["writer"]) for row in rows] == [(1, "first"), (2, "second")]


async def test_a_lock_held_longer_than_the_busy_timeout_is_a_503_not_a_500(
    database: str,
) -> None:
    async with (
        writers(f"{database}?busy_timeout=50", 2) as (first, impatient),
        first._in_transaction() as transaction,
    ):
        await transaction.execute_insert(
            "INSERT INTO log (position, writer) VALUES (1, 'first')", []
        )
        with pytest.raises(Exception) as raised:  # noqa: PT011 - what it becomes is the test
            await append(impatient, "impatient")

    error = to_api_error(raised.value)
    assert isinstance(error, UnavailableError)
    assert (error.status, error.headers["Retry-After"]) == (503, "1")
