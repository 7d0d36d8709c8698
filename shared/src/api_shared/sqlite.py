"""Tortoise's SQLite client, whose write transactions take the database's lock at BEGIN: the
engine ``api_shared.database.tortoise_config`` names for a SQLite file.

SQLite lets one connection write a file at a time, and several processes write the same one:
webhooks-service and its dispatcher, users-service's replicas, a CLI beside a server.
Tortoise begins a transaction with a plain (deferred) ``BEGIN``: the transaction reads under
a snapshot of the file, and its first write must then upgrade to the write lock. If another
connection committed since that snapshot, the upgrade can never succeed, so SQLite answers
``SQLITE_BUSY`` ("database is locked") at once, without waiting ``busy_timeout`` (a
transaction that read first and wrote second, such as the webhooks event log's append, was a
500). ``BEGIN IMMEDIATE`` takes the write lock before the first read, waiting up to
``busy_timeout`` for it: the writers of a file queue instead of failing. Readers outside a
transaction are not held up (WAL, Tortoise's default journal).

A wait longer than ``busy_timeout`` is still ``SQLITE_BUSY``: the error handler answers it
503 UNAVAILABLE with ``Retry-After`` (``api_shared.error_handler.is_database_busy``).
"""

from __future__ import annotations

import sqlite3

from tortoise.backends.base.client import TransactionContext
from tortoise.backends.sqlite.client import SqliteClient as TortoiseSqliteClient
from tortoise.backends.sqlite.client import (
    SqliteTransactionContext,
    SqliteTransactionWrapper,
    translate_exceptions,
)
from tortoise.exceptions import TransactionManagementError

ENGINE = "api_shared.sqlite"
# How long a statement waits for another connection's write lock before SQLITE_BUSY (503):
# below the gateway's UPSTREAM_TIMEOUT_S (10 s), so the caller hears why. A URL's
# ``?busy_timeout=<ms>`` sets another (every query parameter is a PRAGMA).
BUSY_TIMEOUT_MS = 5000


class SqliteClient(TortoiseSqliteClient):
    """Tortoise's client, with ``busy_timeout`` set and immediate write transactions."""

    def __init__(self, file_path: str, **kwargs: object) -> None:
        super().__init__(file_path, **kwargs)
        self.pragmas.setdefault("busy_timeout", BUSY_TIMEOUT_MS)

    def _in_transaction(self) -> TransactionContext:
        return SqliteTransactionContext(ImmediateTransactionWrapper(self), self._lock)

    @translate_exceptions
    async def execute_many(self, query: str, values: list[list[object]]) -> None:
        # Tortoise's, but BEGIN IMMEDIATE (bulk_create outside a transaction).
        async with self.acquire_connection() as connection:
            self.log.debug("%s: %s", query, values)
            await connection.execute("BEGIN IMMEDIATE")
            try:
                await connection.executemany(query, values)
            except Exception:
                await connection.rollback()
                raise
            else:
                await connection.commit()


class ImmediateTransactionWrapper(SqliteTransactionWrapper):
    """A transaction that holds the write lock from its BEGIN (savepoints nest in it)."""

    async def begin(self) -> None:
        try:
            await self._connection.commit()
            await self._connection.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:  # busy past busy_timeout, as Tortoise's
            raise TransactionManagementError(error) from error


client_class = SqliteClient
