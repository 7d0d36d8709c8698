"""A service's own database through Tortoise ORM: config, lifecycle, readiness, migrations,
and the connection pool's metrics."""

from __future__ import annotations

import asyncio
import pkgutil
import sqlite3
from importlib import import_module
from pathlib import Path
from typing import Any

from tortoise import Tortoise, connections
from tortoise.backends.base.config_generator import expand_db_url
from tortoise.contrib.sanic import register_tortoise
from tortoise.exceptions import ConfigurationError as TortoiseConfigurationError
from tortoise.migrations.api import migrate as tortoise_migrate
from tortoise.migrations.recorder import MigrationRecorder

from api_shared import sqlite
from api_shared.frame import frame_of
from api_shared.metrics import Reading, Readings
from api_shared.settings import ConfigurationError
from api_shared.types import App

APP_LABEL = "models"


def tortoise_config(url: str, models_module: str, migrations_module: str) -> dict[str, Any]:
    """The Tortoise config for one service: one connection, one app with its migrations.

    ``url`` is ``sqlite://path`` (embedded default) or ``postgres://...`` (asyncpg).
    """
    return {
        "connections": {"default": _connection(url)},
        "apps": {
            APP_LABEL: {
                "models": [models_module],
                "default_connection": "default",
                "migrations": migrations_module,
            }
        },
        "use_tz": True,
        "timezone": "UTC",
    }


def _connection(url: str) -> str | dict[str, Any]:
    """The connection's config: the URL, and for PostgreSQL the pool's ``reset`` too; a
    SQLite file gets the client whose write transactions begin IMMEDIATE (``api_shared.sqlite``:
    concurrent writers wait for each other instead of failing with "database is locked").

    asyncpg's pool sends a reset query (``pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *;
    RESET ALL``) each time a connection goes back to it: a round trip per statement, since
    Tortoise takes a connection for each. The services keep no session state on pooled
    connections (no ``SET``, cursor, ``LISTEN`` or session-level advisory lock; the relay's
    lock is ``pg_try_advisory_xact_lock``, released with its transaction), so that round
    trip resets nothing. asyncpg still rolls back a transaction left open before a
    connection is reused; only the reset query is skipped.
    """
    config = expand_db_url(url)
    if _sqlite_path(url) is not None:
        config["engine"] = sqlite.ENGINE
        return config
    if config["engine"] != "tortoise.backends.asyncpg":
        return url
    config["credentials"]["reset"] = _keep_session
    return config


async def _keep_session(connection: object) -> None:
    """asyncpg's pool ``reset`` hook: nothing to reset (see ``_connection``)."""


def _sqlite_path(url: str | dict[str, Any]) -> str | None:
    """The file a ``sqlite://`` URL (or its connection's config) names; None for other
    databases and ``:memory:``."""
    if isinstance(url, dict):
        is_sqlite = url["engine"] == sqlite.ENGINE
        return str(url["credentials"]["file_path"]) if is_sqlite else None
    if not url.startswith("sqlite://"):
        return None
    path = url.removeprefix("sqlite://").split("?")[0]
    return path if path and path != ":memory:" else None


def ensure_sqlite_writable(url: str | dict[str, Any]) -> None:
    """Make the SQLite file's folder, then prove the file can be created and written.

    Tortoise's SQLite client never releases its connection lock when the file cannot be
    opened, so a read-only filesystem (``docker run --read-only``) hung ``migrate`` forever
    without a word. Checked here first, synchronously: a clear ``ConfigurationError``, at once.
    ``url`` may be a connection's config (see ``_connection``): PostgreSQL's is not checked.
    """
    path = _sqlite_path(url)
    if path is None:
        return
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path)
        try:
            # Takes the write lock: fails on a read-only file or filesystem, writes nothing.
            connection.execute("BEGIN IMMEDIATE")
            connection.rollback()
        finally:
            connection.close()
    except (OSError, sqlite3.Error) as error:
        raise ConfigurationError(
            f"cannot write the SQLite database {path!r} ({error}): point the service's "
            "DATABASE_URL at a writable path, or at PostgreSQL"
        ) from None


async def migrate(config: dict[str, Any]) -> None:
    """Apply every pending migration of the service's app."""
    ensure_sqlite_writable(config["connections"]["default"])
    try:
        await tortoise_migrate(config=config)
    finally:
        await Tortoise.close_connections()


async def ping() -> None:
    """Raise unless the database answers a trivial query."""
    await connections.get("default").execute_query("SELECT 1")


def migration_names(migrations_module: str) -> frozenset[str]:
    """The migrations shipped with the code (the names Tortoise's loader reads from disk)."""
    package = import_module(migrations_module)
    return frozenset(
        name
        for _, name, is_package in pkgutil.iter_modules(package.__path__)
        if not is_package and name[0] not in "_~"
    )


class SchemaCheck:
    """A readiness check: every migration this code ships is recorded as applied.

    A pod whose migration Job has not finished (or failed) must not serve: its queries would
    meet tables of the previous schema. The verdict is cached once true: migrations only move
    forward while the process lives, and the ``database`` check keeps pinging the database.
    """

    def __init__(self, migrations_module: str) -> None:
        self.expected = migration_names(migrations_module)
        self.at_latest = False
        self._recorder: MigrationRecorder | None = None

    async def __call__(self) -> None:
        if self.at_latest:
            return
        if self._recorder is None:
            # Built on first use: the connection exists once the server has started.
            self._recorder = MigrationRecorder(connections.get("default"))
        applied = {
            key.name
            for key in await self._recorder.applied_migrations()
            if key.app_label == APP_LABEL
        }
        missing = self.expected - applied
        if missing:
            raise LookupError(f"migrations not applied: {', '.join(sorted(missing))}")
        self.at_latest = True

    async def wait(self, interval_s: float = 1.0) -> None:
        """Return once the schema is at the latest migration (the migration Job has run)."""
        while True:
            try:
                await self()
                return
            except LookupError:
                await asyncio.sleep(interval_s)


def _client() -> Any:
    """The default connection's client, or None before the ORM is open (or after)."""
    try:
        return connections.get("default")
    except (RuntimeError, KeyError, TortoiseConfigurationError):  # no ORM context or alias
        return None


def _pool_reading(client: Any) -> tuple[int, int, int] | None:
    """(open connections, in use, maximum) of the default connection; None when unknown.

    PostgreSQL (asyncpg): the pool's own counts. asyncpg does not expose how many callers
    wait for a connection, so no metric claims to. SQLite: Tortoise's client is one
    connection behind a lock; in use while a query or transaction holds that lock.
    """
    pool = getattr(client, "_pool", None)
    if pool is not None:  # asyncpg.Pool, created when the ORM opens
        size = pool.get_size()
        return size, size - pool.get_idle_size(), pool.get_max_size()
    lock = getattr(client, "_lock", None)
    if getattr(client, "_connection", None) is not None and lock is not None:  # SQLite
        return 1, int(lock.locked()), 1
    return None


def pool_readings() -> list[Reading]:
    """The default connection's pool as metrics, read at scrape time."""

    def read(index: int) -> float | None:
        reading = _pool_reading(_client())
        return None if reading is None else reading[index]

    return [
        Reading(
            "db_pool_connections",
            "Open database connections (SQLite: its one connection).",
            lambda: read(0),
        ),
        Reading(
            "db_pool_connections_in_use",
            "Database connections lent to a query or transaction right now.",
            lambda: read(1),
        ),
        Reading(
            "db_pool_max_connections",
            "Most database connections the pool opens (SQLite: 1).",
            lambda: read(2),
        ),
    ]


def install_database(app: App, config: dict[str, Any]) -> None:
    """Open the ORM when the server starts, close it when it stops.

    ``/ready`` pings the database and checks that its schema is at the latest migration;
    ``/metrics`` reports the connection pool (``pool_readings``).
    """

    async def check_database_file(app: App) -> None:
        ensure_sqlite_writable(config["connections"]["default"])

    app.register_listener(check_database_file, "before_server_start", priority=100)

    # Tortoise's own Sanic integration: the ORM context is shared with every request task.
    register_tortoise(app, config=config)
    frame = frame_of(app)
    frame.add_readiness_check("database", ping)
    frame.add_readiness_check("schema", SchemaCheck(config["apps"][APP_LABEL]["migrations"]))
    frame.add_collectors([Readings(pool_readings())])
