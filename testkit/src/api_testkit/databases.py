"""Throw-away databases: PostgreSQL when ``TEST_DATABASE_URL`` names a server, else SQLite."""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import asyncpg
from tortoise import Tortoise
from tortoise.context import TortoiseContext

from api_shared.database import migrate

TEST_DATABASE_ENV = "TEST_DATABASE_URL"
SettingsT = TypeVar("SettingsT")
ORM_CLOSE_GUARD_S = 5.0


def database_kind() -> str:
    """Which database the tests run against, for the test report header."""
    return "postgresql" if os.environ.get(TEST_DATABASE_ENV) else "sqlite"


def _admin_dsn(server_url: str) -> str:
    return server_url.replace("postgres://", "postgresql://", 1)


async def _execute(server_url: str, statement: str, *args: object) -> None:
    admin = await asyncpg.connect(_admin_dsn(server_url))
    try:
        await admin.execute(statement, *args)
    finally:
        await admin.close()


async def execute_on(url: str, statement: str, *args: object) -> None:
    """Run one statement (``$1``-style arguments) on the database ``url`` names, as its
    owner would by hand: what a test does to a service's rows from outside (age a token)."""
    if url.startswith("sqlite://"):
        with sqlite3.connect(url.removeprefix("sqlite://")) as connection:
            connection.execute(re.sub(r"\$\d+", "?", statement), args)
        return
    await _execute(url, statement, *args)


async def create_database(server_url: str, label: str) -> str:
    """A new, empty database ``<label>_<random>`` on that server; returns its URL."""
    name = f"{label.replace('-', '_')}_{uuid.uuid4().hex[:12]}"
    await _execute(server_url, f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))


async def drop_database(server_url: str, url: str) -> None:
    """Drop the database ``url`` names, whoever is still connected to it."""
    name = urlsplit(url).path.lstrip("/")
    await _execute(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@asynccontextmanager
async def temporary_database(service: str) -> AsyncIterator[str]:
    """Yield the URL of a fresh, empty database for ``service``; drop it afterwards."""
    server_url = os.environ.get(TEST_DATABASE_ENV)
    if not server_url:
        with tempfile.TemporaryDirectory(prefix=f"{service}-") as folder:
            yield f"sqlite://{Path(folder) / 'test.sqlite3'}"
        return
    url = await create_database(server_url, f"test_{service}")
    try:
        yield url
    finally:
        await drop_database(server_url, url)


@asynccontextmanager
async def migrated_settings(
    label: str,
    settings_for: Callable[[str], SettingsT],
    database_config: Callable[[SettingsT], dict[str, Any]],
) -> AsyncIterator[SettingsT]:
    """A service's settings (``settings_for(url)``) on a fresh database (``temporary_database``)
    that its migrations have been applied to, as its ``migrate`` command would; dropped after.

    The migration runs in an isolated ``TortoiseContext``: an app served in this process
    keeps the ORM state of its own.
    """
    async with temporary_database(label) as url:
        settings = settings_for(url)
        async with TortoiseContext():
            await migrate(database_config(settings))
        yield settings


async def server_started_at(server_url: str) -> datetime:
    """When that PostgreSQL server last started (a restart changes it)."""
    connection = await asyncpg.connect(_admin_dsn(server_url))
    try:
        started: datetime = await connection.fetchval("SELECT pg_postmaster_start_time()")
    finally:
        await connection.close()
    return started


@asynccontextmanager
async def orm_on_temporary_database(label: str, models: list[str]) -> AsyncIterator[None]:
    """Tortoise open on a fresh database (``temporary_database``) with ``models``' tables.

    Closing is bounded: a pool that cannot close (a connection never given back) fails the
    caller after ``ORM_CLOSE_GUARD_S`` instead of hanging it; a healthy close takes
    milliseconds.
    """
    async with temporary_database(label) as url:
        await Tortoise.init(db_url=url, modules={"models": models}, use_tz=True)
        # Test support only (the kit never ships): the shared package's models have no
        # migrations of their own (each service's migrations carry them), so a shared test
        # gets their tables as declared. Services and their tests always migrate.
        await Tortoise.generate_schemas()
        try:
            yield
        finally:
            async with asyncio.timeout(ORM_CLOSE_GUARD_S):
                await Tortoise.close_connections()
