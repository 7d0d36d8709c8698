"""PostgreSQL restarts under steady traffic: every service's pool reconnects by itself.

Collected only when TEST_DATABASE_URL names a PostgreSQL server (see conftest). The server is
the machine's only one, shared with other test runs: it is restarted once, briefly, and
started again at the end whatever happened.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import pytest

from api_testkit.databases import TEST_DATABASE_ENV, server_started_at
from api_testkit.events import eventually

from .conftest import FaultBench

CLUSTER = "main"
BACK_WITHIN_S = 60.0


def _version() -> str:
    versions = sorted(path.name for path in Path("/etc/postgresql").iterdir())
    assert len(versions) == 1, f"expected one PostgreSQL installation, found {versions}"
    return versions[0]


def _pg_ctlcluster(action: str) -> list[str]:
    return ["pg_ctlcluster", "--skip-systemctl-redirect", _version(), CLUSTER, action]


def _server_dsn() -> str:
    return os.environ[TEST_DATABASE_ENV].replace("postgres://", "postgresql://", 1)


@pytest.fixture
def postgres_is_left_running() -> Iterator[None]:
    """Whatever the test does, the shared server is up when it ends."""
    yield
    if subprocess.run(["pg_isready", "-q", "-d", _server_dsn()], check=False).returncode != 0:
        subprocess.run(_pg_ctlcluster("start"), check=False)


async def _connections_since(moment: datetime, databases: set[str]) -> dict[str, int]:
    """How many connections to each of ``databases`` were opened after ``moment``."""
    connection = await asyncpg.connect(_server_dsn())
    try:
        rows = await connection.fetch(
            "SELECT datname, count(*) AS opened FROM pg_stat_activity"
            " WHERE datname = ANY($1::text[]) AND backend_start > $2 GROUP BY datname",
            list(databases),
            moment,
        )
    finally:
        await connection.close()
    return {row["datname"]: row["opened"] for row in rows}


async def _unpublished_events(database_url: str) -> int:
    """Rows of that service's outbox its relay has not published yet."""
    connection = await asyncpg.connect(database_url.replace("postgres://", "postgresql://", 1))
    try:
        count: int = await connection.fetchval(
            "SELECT count(*) FROM outbox_events WHERE published_at IS NULL"
        )
    finally:
        await connection.close()
    return count


async def _accepting_connections() -> float:
    """Wait until the server accepts a connection and answers; when (monotonic) it did."""
    deadline = time.monotonic() + BACK_WITHIN_S
    while True:
        try:
            connection = await asyncpg.connect(_server_dsn(), timeout=1.0)
            try:
                await connection.fetchval("SELECT 1")
            finally:
                await connection.close()
            return time.monotonic()
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


@pytest.mark.usefixtures("postgres_is_left_running")
async def test_a_postgresql_restart_costs_only_503s_and_every_pool_reconnects_by_itself(
    fault_bench: FaultBench,
) -> None:
    started_at = await server_started_at(_server_dsn())
    notes: list[str] = []

    async def restart() -> None:
        started = time.monotonic()
        process = await asyncio.create_subprocess_exec(
            *_pg_ctlcluster("restart"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await process.communicate()
        notes.append(f"pg_ctlcluster restart took {time.monotonic() - started:.1f}s")
        assert process.returncode == 0, output.decode(errors="replace")

    await fault_bench.scenario(
        "PostgreSQL restarted",
        down={"postgres"},
        inject=restart,
        restore=_accepting_connections,
        outage_s=0.0,
        # The server is down for well under a second: requests may all fall either side of
        # it. Every pooled connection was cut, though: that the traffic after it succeeds
        # shows each pool reconnected by itself.
        expect_refusals=False,
        notes=notes,
    )

    # The relays are long-lived tasks whose transactions the restart cut: they publish again.
    for name in ("users", "orders"):
        url = fault_bench.stack.services[name].env[f"{name.upper()}_DATABASE_URL"]

        async def published(url: str = url) -> bool:
            return await _unpublished_events(url) == 0

        await eventually(published, f"{name}-service's relay to publish its outbox again")

    restarted_at = await server_started_at(_server_dsn())
    assert restarted_at > started_at, "PostgreSQL was not restarted"
    # Each service has its own database, and connections to it again: new ones, necessarily.
    databases = {
        name: urlsplit(
            fault_bench.stack.services[name].env[f"{name.upper()}_DATABASE_URL"]
        ).path.lstrip("/")
        for name in ("users", "orders", "books")
    }
    connected = await _connections_since(restarted_at, set(databases.values()))
    assert {name for name, database in databases.items() if connected.get(database)} == set(
        databases
    ), f"services without a connection since the restart: {connected}"
