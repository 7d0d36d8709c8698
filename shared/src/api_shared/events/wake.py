"""Waking the outbox relay when rows commit, so events leave at once rather than at its poll.

PostgreSQL: ``Outbox.record`` notifies ``CHANNEL`` in the row's transaction; the database
delivers the notification only if it commits, to every connection listening in that
database: every replica's relay (``Listener``). SQLite (one process): the transaction's
``after_commit`` wakes this process's relays (``wake_local_relays``).

A wake is a hint: the relay still polls, so a lost notification costs at most its poll.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import asyncpg
from tortoise.backends.asyncpg.client import AsyncpgDBClient
from tortoise.backends.base.client import BaseDBAsyncClient

logger = logging.getLogger(__name__)

# LISTEN/NOTIFY channels are per database, and each service has its own.
CHANNEL = "outbox_events"
CONNECT_TIMEOUT_S = 5.0
RETRY_S = 5.0  # a listener that failed to connect is tried again no sooner than this

# The relays of this process (SQLite's wake; a relay adds its event while it runs).
_local: set[asyncio.Event] = set()

# Options of Tortoise's pool that asyncpg.connect does not take.
_POOL_ONLY = frozenset(
    {
        "min_size",
        "max_size",
        "max_queries",
        "max_inactive_connection_lifetime",
        "setup",
        "init",
        "reset",
        "loop",
    }
)


def wake_local_relays() -> None:
    """Wake the relays of this process (an ``after_commit`` callback)."""
    for wake in _local:
        wake.set()


def watch_locally(wake: asyncio.Event) -> None:
    _local.add(wake)


def unwatch_locally(wake: asyncio.Event) -> None:
    _local.discard(wake)


class Listener:
    """One dedicated connection that LISTENs on ``channel`` (the outbox's ``CHANNEL`` unless
    told) and sets ``wake`` on each notification; reconnected by ``ensure`` when it dropped,
    never raising."""

    def __init__(self, wake: asyncio.Event, channel: str = CHANNEL) -> None:
        self.wake = wake
        self.channel = channel
        self.notifications = 0  # received, since start (tests read it)
        self._connection: asyncpg.Connection | None = None
        self._next_attempt = 0.0
        self._failing = False

    @property
    def listening(self) -> bool:
        return self._connection is not None and not self._connection.is_closed()

    @property
    def server_pid(self) -> int | None:
        """The PostgreSQL backend listening for us, while one does."""
        connection = self._connection
        if connection is None or connection.is_closed():
            return None
        pid: int = connection.get_server_pid()
        return pid

    async def ensure(self, client: BaseDBAsyncClient) -> bool:
        """Listen through ``client``'s database unless already; whether it listens."""
        if self.listening:
            return True
        if not isinstance(client, AsyncpgDBClient) or time.monotonic() < self._next_attempt:
            return False
        if self._connection is not None:
            logger.warning("listener lost; reconnecting", extra={"channel": self.channel})
        await self.close()
        try:
            connection = await asyncio.wait_for(
                asyncpg.connect(**_connect_options(client)), CONNECT_TIMEOUT_S
            )
            await connection.add_listener(self.channel, self._notified)
            # Lost (PostgreSQL restarted): the relay's next round reconnects, at once.
            connection.add_termination_listener(self._notified_lost)
        except Exception as error:
            self._next_attempt = time.monotonic() + RETRY_S
            if not self._failing:  # once per outage, not per attempt
                logger.warning(
                    "listener could not connect; polling meanwhile",
                    extra={"channel": self.channel, "error": repr(error), "retry_in_s": RETRY_S},
                )
            self._failing = True
            return False
        self._connection, self._failing = connection, False
        logger.info("listener connected", extra={"channel": self.channel})
        # A row may have committed while nobody listened: look at once.
        self.wake.set()
        return True

    def _notified_lost(self, *_: Any) -> None:
        self.wake.set()

    def _notified(self, *_: Any) -> None:
        self.notifications += 1
        self.wake.set()

    async def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None or connection.is_closed():
            return
        try:
            await asyncio.wait_for(connection.close(), 1.0)
        except Exception:
            connection.terminate()
        except BaseException:  # cancelled while closing: still let the connection go
            connection.terminate()
            raise


def _connect_options(client: AsyncpgDBClient) -> dict[str, Any]:
    """What Tortoise's pool connects with (``_template``, set once it opened), for one
    connection of its own."""
    template: dict[str, Any] = getattr(client, "_template", None) or {
        "host": client.host,
        "port": client.port,
        "user": client.user,
        "database": client.database,
    }
    options = {key: value for key, value in template.items() if key not in _POOL_ONLY}
    return {**options, "password": client.password}
