"""``python -m users_service seed`` and the ``user_counts`` migration, on fresh databases;
``/ready`` of a process whose database is behind the code's migrations, and of one whose
database a newer release has migrated (expand/contract, docs/deployment-upgrades.md).

Each runs in a child process, as an operator runs them: the ORM's state is per process,
and this session's server holds it here.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from asyncio.subprocess import PIPE
from typing import Any

import httpx

from api_testkit.databases import temporary_database

# The schema before user_counts, with users in it: what an existing deployment has.
BEFORE_USER_COUNTS = """
import asyncio, sys
from tortoise import Tortoise
from tortoise.migrations.api import migrate
from users_service.database import database_config
from users_service.settings import Settings

async def main(url):
    try:
        await migrate(config=database_config(Settings(database_url=url)),
                      target="models.0001_initial")
    finally:
        await Tortoise.close_connections()

asyncio.run(main(sys.argv[1]))
"""
EXISTING_USERS = """
import asyncio, sys, uuid
from datetime import UTC, datetime
from tortoise import Tortoise, connections
from users_service.database import database_config
from api_shared.auth import Role
from users_service.models import User
from users_service.settings import Settings

async def main(url):
    # As the version that wrote them: the columns of 0001 alone (today's model has more).
    await Tortoise.init(config=database_config(Settings(database_url=url)))
    try:
        for role in (Role.CUSTOMER, Role.CUSTOMER, Role.CUSTOMER, Role.ADMIN):
            now = datetime.now(UTC)
            await connections.get("default").execute_query(
                'INSERT INTO "users" ("id", "name", "role", "created_at", "updated_at") '
                "VALUES ($1, $2, $3, $4, $5)" if "postgres" in url else
                'INSERT INTO "users" ("id", "name", "role", "created_at", "updated_at") '
                "VALUES (?, ?, ?, ?, ?)",
                [str(uuid.uuid4()), "Existing", role.value, now, now],
            )
    finally:
        await Tortoise.close_connections()

asyncio.run(main(sys.argv[1]))
"""

AN_ADMIN = """
import asyncio, sys, uuid
from datetime import UTC, datetime
from tortoise import Tortoise, connections
from users_service.database import database_config
from users_service.settings import Settings

async def main(url, email):
    # The columns of 0001 alone, as the version that wrote the row had them.
    await Tortoise.init(config=database_config(Settings(database_url=url)))
    try:
        now = datetime.now(UTC)
        placeholders = "$1, $2, $3, $4, $5, $6" if "postgres" in url else "?, ?, ?, ?, ?, ?"
        await connections.get("default").execute_query(
            'INSERT INTO "users" ("id", "name", "email", "role", "created_at", "updated_at") '
            f"VALUES ({placeholders})",
            [str(uuid.uuid4()), "Admin", email, "admin", now, now],
        )
    finally:
        await Tortoise.close_connections()

asyncio.run(main(*sys.argv[1:]))
"""
BEHIND_ADMIN_EMAIL = "behind@example.com"

# What a newer release's migration Job leaves: a migration this code does not ship, recorded
# as applied, that expanded the schema (a nullable column: the previous release never names
# it, so its inserts and reads are unchanged).
A_NEWER_RELEASE = """
import asyncio, sys
from tortoise import Tortoise, connections
from tortoise.migrations.recorder import MigrationRecorder
from users_service.database import database_config
from users_service.settings import Settings

async def main(url):
    await Tortoise.init(config=database_config(Settings(database_url=url)))
    try:
        connection = connections.get("default")
        await connection.execute_script('ALTER TABLE "users" ADD COLUMN "nickname" VARCHAR(40)')
        await MigrationRecorder(connection).record_applied("models", "9999_from_a_newer_release")
    finally:
        await Tortoise.close_connections()

asyncio.run(main(sys.argv[1]))
"""
AHEAD_ADMIN_EMAIL = "ahead@example.com"

COUNTS = """
import asyncio, json, sys
from tortoise import Tortoise
from users_service.database import database_config
from api_shared.auth import Role
from users_service.models import User, UserCount
from users_service.settings import Settings

async def main(url):
    await Tortoise.init(config=database_config(Settings(database_url=url)))
    counts = dict(await UserCount.all().values_list("role", "n"))
    rows = await User.all().count()
    without_password = await User.filter(password_hash__isnull=True).count()
    emails = len(set(await User.all().values_list("email", flat=True)))
    active = await User.filter(is_active=True).count()
    await Tortoise.close_connections()
    print(json.dumps({"counts": {str(r): n for r, n in counts.items()}, "rows": rows,
                      "without_password": without_password, "emails": emails,
                      "active": active}))

asyncio.run(main(sys.argv[1]))
"""

# The schema of 1.2.0 (before api_keys), migrated to the end.
BEFORE_API_KEYS = BEFORE_USER_COUNTS.replace("models.0001_initial", "models.0005_account_mail")
# What a 1.2.0 replica does beside the new table: sign a user up and delete one, in SQL that
# names only the columns it knows; the deleted user's key goes with the row.
PREVIOUS_RELEASE_BESIDE_KEYS = """
import asyncio, json, sys, uuid
from datetime import UTC, datetime
from tortoise import Tortoise, connections
from users_service.database import database_config
from users_service.models import ApiKey
from users_service.settings import Settings

async def main(url):
    await Tortoise.init(config=database_config(Settings(database_url=url)))
    try:
        connection = connections.get("default")
        mark = (lambda n: f"${n}") if "postgres" in url else (lambda n: "?")
        ids = [str(uuid.uuid4()), str(uuid.uuid4())]
        for user_id in ids:
            now = datetime.now(UTC)
            await connection.execute_query(
                'INSERT INTO "users" ("id", "name", "role", "is_active", "email_verified", '
                '"created_at", "updated_at") '
                f"VALUES ({mark(1)}, {mark(2)}, {mark(3)}, TRUE, FALSE, {mark(4)}, {mark(5)})",
                [user_id, "Old", "customer", now, now],
            )
            await ApiKey.create(id=uuid.uuid4(), user_id=user_id, name="k", prefix="ak_live_abcd",
                                secret_hash=uuid.uuid4().hex * 2, scopes="orders:read",
                                created_at=now)
        await connection.execute_query(f'DELETE FROM "users" WHERE "id" = {mark(1)}', [ids[0]])
        kept = await ApiKey.all().values_list("user_id", flat=True)
        print(json.dumps({"keys_of": [str(user_id) for user_id in kept], "ids": ids}))
    finally:
        await Tortoise.close_connections()

asyncio.run(main(sys.argv[1]))
"""


async def run(*args: str, url: str) -> str:
    """``python *args`` against ``url``; its stdout (it must succeed)."""
    env = dict(os.environ, USERS_DATABASE_URL=url, LOG_LEVEL="WARNING")
    child = await asyncio.create_subprocess_exec(
        sys.executable, *args, env=env, stdout=PIPE, stderr=PIPE
    )
    stdout, stderr = await asyncio.wait_for(child.communicate(), timeout=300)
    assert child.returncode == 0, stderr.decode()
    return stdout.decode()


async def test_the_migrations_count_the_users_already_there_and_make_them_active() -> None:
    async with temporary_database("users-migration") as url:
        await run("-c", BEFORE_USER_COUNTS, url, url=url)
        await run("-c", EXISTING_USERS, url, url=url)
        await run("-m", "users_service", "migrate", url=url)
        state = json.loads(await run("-c", COUNTS, url, url=url))

    assert state["counts"] == {"customer": 3, "admin": 1}
    assert state["active"] == 4  # users from before isActive existed are active


async def test_the_api_keys_migration_keeps_the_users_and_the_previous_release_working() -> None:
    async with temporary_database("users-api-keys") as url:
        await run("-c", BEFORE_API_KEYS, url, url=url)
        await run("-c", EXISTING_USERS, url, url=url)
        await run("-m", "users_service", "migrate", url=url)
        beside = json.loads(await run("-c", PREVIOUS_RELEASE_BESIDE_KEYS, url, url=url))
        state = json.loads(await run("-c", COUNTS, url, url=url))

    assert beside["keys_of"] == [beside["ids"][1]]  # the deleted user's key went with it
    assert state["rows"] == 5  # the four from before, and the one the old release kept


async def test_seed_adds_users_without_passwords_and_counts_them_exactly() -> None:
    async with temporary_database("users-seed") as url:
        await run("-m", "users_service", "migrate", url=url)
        first = await run("-m", "users_service", "seed", "--users", "2500", "--batch-size", "999",
                          url=url)  # fmt: skip
        await run("-m", "users_service", "seed", "--users", "10", url=url)  # seeding again adds
        state = json.loads(await run("-c", COUNTS, url, url=url))

    assert "2500 users added" in first
    assert state["rows"] == 2510
    assert state["counts"] == {"customer": 2510, "admin": 0}
    assert state["without_password"] == 2510
    assert state["emails"] == 2510
    assert state["active"] == 2510


async def first_answer(
    probe: httpx.AsyncClient, path: str, within_s: float = 60.0
) -> httpx.Response:
    """The first answer to ``GET path`` (the process may not be listening yet)."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            return await probe.get(path)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def test_a_process_is_not_ready_until_the_last_migration_has_run(launcher: Any) -> None:
    # Kubernetes runs the migration Job while the new pods start: no traffic on the old schema.
    async with temporary_database("users-behind") as url:
        await run("-c", BEFORE_USER_COUNTS, url, url=url)
        # The configured admin exists already, as it does in a running deployment.
        await run("-c", AN_ADMIN, url, BEHIND_ADMIN_EMAIL, url=url)
        service = launcher.start(USERS_DATABASE_URL=url, ADMIN_EMAIL=BEHIND_ADMIN_EMAIL)
        try:
            async with httpx.AsyncClient(base_url=service.url, timeout=5.0) as probe:
                behind = await first_answer(probe, "/ready")
                await run("-m", "users_service", "migrate", url=url)  # the Job finishes
                migrated = await probe.get("/ready")
        finally:
            service.stop()

    assert behind.status_code == 503, service.stderr.read_text()
    assert behind.json()["checks"] == {"database": "ok", "schema": "unavailable"}
    assert migrated.status_code == 200
    assert migrated.json()["checks"] == {"database": "ok", "schema": "ok"}


async def test_this_release_migrates_serves_and_writes_on_a_schema_a_newer_release_expanded(
    launcher: Any,
) -> None:
    # A rolling upgrade runs the new release's migration Job while the previous release still
    # serves; a rollback runs the previous release's Job again on the newer schema.
    async with temporary_database("users-ahead") as url:
        await run("-m", "users_service", "migrate", url=url)
        await run("-c", AN_ADMIN, url, AHEAD_ADMIN_EMAIL, url=url)
        await run("-c", A_NEWER_RELEASE, url, url=url)
        await run("-m", "users_service", "migrate", url=url)  # succeeds, applies nothing
        service = launcher.start(USERS_DATABASE_URL=url, ADMIN_EMAIL=AHEAD_ADMIN_EMAIL)
        try:
            async with httpx.AsyncClient(base_url=service.url, timeout=5.0) as client:
                ready = await first_answer(client, "/ready")
                created = await client.post(
                    "/api/users",
                    json={"name": "Ahead", "email": "ahead-user@example.com", "password": "x" * 12},
                )
        finally:
            service.stop()
        state = json.loads(await run("-c", COUNTS, url, url=url))

    assert ready.status_code == 200, service.stderr.read_text()
    assert ready.json()["checks"] == {"database": "ok", "schema": "ok"}
    assert created.status_code == 201, created.text
    assert state["rows"] == 2  # the admin and the user this release wrote


def test_seed_refuses_a_count_below_one() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "users_service", "seed", "--users", "0"],
        capture_output=True,
        text=True,
        check=False,
    )

    assert done.returncode == 2
    assert "--users" in done.stderr
