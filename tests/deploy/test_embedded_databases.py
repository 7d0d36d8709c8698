"""`make run`'s embedded default: every service's migrations apply to a fresh SQLite file.

The suites run against PostgreSQL in CI, so a migration only SQLite refuses (Tortoise runs a
migration's SQL statement by statement, split at semicolons, a table comment's included)
would break `make run` on a new machine and nothing else: this runs each service's own
``migrate`` command, as the Procfile does, on an empty file.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICES = {
    "users_service": ("USERS_DATABASE_URL", {"users", "sessions", "outbox_events"}),
    "orders_service": ("ORDERS_DATABASE_URL", {"orders", "idempotency_records", "outbox_events"}),
    "books_graphql": ("BOOKS_DATABASE_URL", {"books"}),
    "webhooks_service": ("WEBHOOKS_DATABASE_URL", {"webhook_endpoints", "webhook_deliveries"}),
}


@pytest.mark.parametrize("module", sorted(SERVICES))
def test_every_migration_applies_to_a_fresh_sqlite_file(module: str, tmp_path: Path) -> None:
    variable, expected_tables = SERVICES[module]
    database = tmp_path / f"{module}.sqlite3"
    environment = {**os.environ, variable: f"sqlite://{database}", "LOG_LEVEL": "WARNING"}

    done = subprocess.run(
        [sys.executable, "-m", module, "migrate"],
        env=environment,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    with sqlite3.connect(database) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    assert expected_tables <= tables, sorted(tables)
