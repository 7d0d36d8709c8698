"""Database transactions that give their connection back when BEGIN fails and run
``after_commit`` callbacks once they commit, and one pooled connection for a few statements
outside a transaction (``one_connection``).

Use ``in_transaction`` from here, never Tortoise's (ruff's banned-api rule says so).

Tortoise (1.1.9) enters a transaction in three steps: take a connection (PostgreSQL: from
the pool; SQLite: the one connection's lock), make it the task's current connection, send
BEGIN. Only ``__aexit__`` undoes the first two, and Python does not call ``__aexit__`` when
``__aenter__`` raises. So a BEGIN that failed (PostgreSQL restarting, a connection cut, a
cancellation at that moment) lost the connection: the pool shrank for good and closing it at
shutdown waited 10 s for the lost one (long enough for the process to be killed), and the
task stayed pinned to the dead connection — the outbox relay, a long-lived task, answered
"connection is closed" forever after a PostgreSQL restart. On SQLite the lock stayed taken
and every later transaction waited for ever.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from typing import Any

from tortoise import connections
from tortoise.backends.asyncpg.client import AsyncpgDBClient, TransactionWrapper
from tortoise.backends.base.client import TransactionalDBClient
from tortoise.connection import get_connections
from tortoise.transactions import in_transaction as _tortoise_in_transaction  # noqa: TID251

# The callbacks of the outermost open transaction (a nested one is a savepoint: its commit
# is not the commit). A list shared by reference, so a task started inside sees it too.
_after_commit: ContextVar[list[Callable[[], None]] | None] = ContextVar(
    "after_commit", default=None
)


def after_commit(callback: Callable[[], None]) -> None:
    """Call ``callback`` once the open transaction commits; never if it rolls back. Outside
    ``in_transaction`` there is no commit to wait for: it is called at once. Callbacks
    registered in a savepoint that rolled back still run when the outer one commits: use
    them for hints (wake the outbox relay), not for facts. A callback must not raise."""
    callbacks = _after_commit.get()
    if callbacks is None:
        callback()
    else:
        callbacks.append(callback)


@contextlib.asynccontextmanager
async def in_transaction(
    connection_name: str | None = None,
) -> AsyncIterator[TransactionalDBClient]:
    """One transaction on ``connection_name``: committed on success, rolled back on error;
    ``after_commit`` callbacks run once the outermost one committed."""
    if _after_commit.get() is not None:
        async with _transaction(connection_name) as client:
            yield client
        return
    callbacks: list[Callable[[], None]] = []
    token = _after_commit.set(callbacks)
    try:
        async with _transaction(connection_name) as client:
            yield client
    finally:
        _after_commit.reset(token)
    for callback in callbacks:
        callback()


@contextlib.asynccontextmanager
async def _transaction(connection_name: str | None) -> AsyncIterator[TransactionalDBClient]:
    context = _tortoise_in_transaction(connection_name)
    try:
        client = await context.__aenter__()
    except BaseException as error:
        # The context's token is set once the connection is taken and current, just before
        # BEGIN: if it is, hand both back the way leaving the block would (its rollback of a
        # transaction that never began fails; the connection is released all the same).
        if hasattr(context, "token"):
            with contextlib.suppress(Exception):
                await context.__aexit__(type(error), error, error.__traceback__)
        raise
    try:
        yield client
    except BaseException as error:
        await context.__aexit__(type(error), error, error.__traceback__)
        raise
    await context.__aexit__(None, None, None)


_pinned: ContextVar[TransactionWrapper | None] = ContextVar("pinned_client", default=None)


def pinned_connection(client: Any) -> Any:
    """The asyncpg connection under ``client`` when it is ``one_connection``'s, else None:
    its statements may go to asyncpg directly (Tortoise's layers cost ~13 µs each)."""
    pinned = _pinned.get()
    return pinned._connection if pinned is not None and pinned is client else None


@contextlib.asynccontextmanager
async def one_connection(connection_name: str = "default") -> AsyncIterator[None]:
    """Run the block's statements on one connection from the pool, each in autocommit.

    Tortoise takes a connection from asyncpg's pool for each statement, and a hand-out and
    return cost about 75 µs of CPU: as much as running a small query. A request that reads
    three times (the users page: caller, page, total) takes one instead of three. Nothing
    changes for SQLite (one connection already) or inside a transaction (pinned already).
    """
    client = connections.get(connection_name)
    if not isinstance(client, AsyncpgDBClient) or isinstance(client, TransactionalDBClient):
        yield
        return
    pool = client._pool
    if pool is None:  # not opened yet: Tortoise opens it on the first statement
        yield
        return
    pinned = TransactionWrapper(client)  # Tortoise's client over one connection; no BEGIN
    pinned._connection = await pool.acquire()
    token = get_connections().set(connection_name, pinned)
    own = _pinned.set(pinned)
    try:
        yield
    finally:
        _pinned.reset(own)
        get_connections().reset(token)
        await pool.release(pinned._connection)
