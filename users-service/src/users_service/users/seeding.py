"""Many users, fast, for benchmarks and demos: PostgreSQL ``COPY``, SQLite ``executemany``.

Seeded users are customers without a password (nothing to hash) with a unique email
(``seed-<run>-<n>@example.com``, ``<run>`` random per seeding, so seeding twice adds users),
created one millisecond apart ending now. Each batch is one transaction that also adds its
size to the ``customer`` count, so the counts stay exact even if seeding is interrupted.
On PostgreSQL the table is vacuumed and analysed at the end, as after any bulk load.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from tortoise import connections
from tortoise.backends.base.client import BaseDBAsyncClient

from api_shared.auth import Role
from api_shared.transactions import in_transaction
from users_service.models import User
from users_service.users.repository import add_to_count

DEFAULT_BATCH_SIZE = 20_000
COLUMNS = (
    "id", "name", "email", "password_hash", "role", "is_active", "created_at", "updated_at"
)  # fmt: skip
FIRST_NAMES = ("Ada", "Alan", "Barbara", "Edsger", "Grace", "Ken", "Linus", "Margaret", "Niklaus")
LAST_NAMES = ("Hopper", "Kay", "Knuth", "Lamport", "Liskov", "Ritchie", "Thompson", "Wirth")

SeedRow = tuple[uuid.UUID, str, str, None, str, bool, datetime, datetime]


def seed_rows(count: int, *, now: datetime | None = None) -> Iterator[SeedRow]:
    """``count`` new users' column values, in ``COLUMNS`` order, oldest first."""
    run = uuid.uuid4().hex[:8]
    first = (now or datetime.now(UTC)) - timedelta(milliseconds=count)
    role = Role.CUSTOMER.value
    for n in range(count):
        name = f"{FIRST_NAMES[n % len(FIRST_NAMES)]} {LAST_NAMES[n // 7 % len(LAST_NAMES)]} {n}"
        created = first + timedelta(milliseconds=n)
        email = f"seed-{run}-{n}@example.com"
        yield uuid.uuid4(), name, email, None, role, True, created, created


def batches(rows: Iterator[SeedRow], size: int) -> Iterator[list[SeedRow]]:
    batch: list[SeedRow] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


async def seed_users(
    count: int,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_batch: Callable[[int], object] = lambda n: None,
) -> None:
    """Insert ``count`` users through the ORM's open ``default`` connection."""
    client = connections.get("default")
    postgres = client.capabilities.dialect == "postgres"
    insert = _copy_batch if postgres else _insert_batch
    for batch in batches(seed_rows(count), batch_size):
        await insert(client, batch)
        on_batch(len(batch))
    if postgres:
        # After a bulk load: planner statistics, and the visibility map that lets the
        # list's deep pages be index-only scans (autovacuum would get there, later).
        async with client.acquire_connection() as connection:
            await connection.execute("VACUUM (ANALYZE) users")


async def _copy_batch(client: BaseDBAsyncClient, batch: list[SeedRow]) -> None:
    """PostgreSQL: binary ``COPY`` of the batch and the count update, in one transaction."""
    connection: Any  # asyncpg.Connection (asyncpg ships no type information)
    async with client.acquire_connection() as connection, connection.transaction():
        await connection.copy_records_to_table("users", records=batch, columns=COLUMNS)
        await connection.execute(
            "UPDATE user_counts SET n = n + $1 WHERE role = $2", len(batch), Role.CUSTOMER.value
        )


async def _insert_batch(client: BaseDBAsyncClient, batch: list[SeedRow]) -> None:
    """SQLite: the ORM's bulk insert (``executemany``) and the count, in one transaction."""
    async with in_transaction():
        await User.bulk_create(
            [User(**dict(zip(COLUMNS, row, strict=True))) for row in batch],
            batch_size=len(batch),
        )
        await add_to_count(Role.CUSTOMER, len(batch))
