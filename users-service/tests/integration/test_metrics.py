"""users-service's /metrics: the Argon2 slots and the database pool, on real parts.

The slots are watched on a process of its own under a burst of sign-ups; the pool on the
test database (PostgreSQL with TEST_DATABASE_URL, else SQLite) through Tortoise itself.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any

import httpx
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from tortoise import connections
from tortoise.context import TortoiseContext

from api_shared.database import pool_readings
from api_shared.metrics import register_readings
from api_shared.transactions import in_transaction
from users_service.database import database_config
from users_service.settings import Settings

ProcessLauncher = Any  # the conftest fixture: start(**env), running(**env)

SIGN_UPS = 12
ARGON2_MEMORY_KIB = 32 * 1024  # a real hash's cost, so that a slot stays busy a while


def _samples(text: str) -> dict[str, float]:
    """The unlabelled samples of a /metrics answer, by name."""
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if not sample.labels
    }


async def test_a_burst_of_sign_ups_shows_at_metrics_as_busy_slots_waiters_and_refusals(
    launcher: ProcessLauncher,
) -> None:
    """One slot, a short wait: some sign-ups hash, some wait, the rest are refused (503).

    /metrics is read throughout; whatever the machine's speed, the refusals it counts are
    exactly the 503s the clients got, and once the burst is over nothing is busy.
    """
    async with (
        launcher.running(
            ARGON2_SLOTS="1",
            ARGON2_MEMORY_KIB=str(ARGON2_MEMORY_KIB),
            ARGON2_SLOT_WAIT_S="0.3",
            # No outbox relay: its rounds hold a connection for their transaction, and one
            # caught at the last scrape is not the sign-ups' (this test counts theirs).
            EVENTS_ENABLED="false",
        ) as service,
        httpx.AsyncClient(base_url=service.url, timeout=30.0) as client,
    ):
        before = _samples((await client.get("/metrics")).text)
        bodies = [
            {
                "name": "Burst",
                "email": f"burst-{uuid.uuid4().hex[:10]}@example.com",
                "password": "burst-password",
            }
            for _ in range(SIGN_UPS)
        ]
        burst = [asyncio.create_task(client.post("/api/users", json=body)) for body in bodies]
        seen_in_use, seen_waiting = 0.0, 0.0
        while not all(task.done() for task in burst):
            during = _samples((await client.get("/metrics")).text)
            seen_in_use = max(seen_in_use, during["argon2_slots_in_use"])
            seen_waiting = max(seen_waiting, during["argon2_slots_waiting"])
        statuses = Counter(task.result().status_code for task in burst)
        after = _samples((await client.get("/metrics")).text)

    assert set(statuses) <= {201, 503}, statuses
    assert statuses[201] >= 1
    assert before["argon2_slots"] == after["argon2_slots"] == 1
    assert before["argon2_slot_refusals_total"] == 0
    assert seen_in_use == 1
    assert seen_waiting >= 1
    assert after["argon2_slot_refusals_total"] == statuses[503]
    assert after["argon2_slots_in_use"] == after["argon2_slots_waiting"] == 0
    # The sign-ups went through the pool: it is open, and lends nothing once they are done.
    assert 1 <= after["db_pool_connections"] <= after["db_pool_max_connections"]
    assert after["db_pool_connections_in_use"] == 0


async def test_the_pool_metrics_count_the_connection_a_transaction_holds(
    settings: Settings,
) -> None:
    """A transaction of another task holds a connection while the metrics are read.

    Read from outside it, as a scrape is: inside, Tortoise answers with the transaction's
    own client.
    """
    registry = CollectorRegistry()
    register_readings(registry, pool_readings())
    opened, done = asyncio.Event(), asyncio.Event()

    def sample(name: str) -> float | None:
        return registry.get_sample_value(name)

    async def hold_a_transaction() -> None:
        async with in_transaction():
            await connections.get("default").execute_query("SELECT 1")
            opened.set()
            await done.wait()

    async with TortoiseContext() as context:
        await context.init(config=database_config(settings))
        unopened = sample("db_pool_connections_in_use")  # Tortoise connects on first use
        await connections.get("default").execute_query("SELECT 1")
        idle = sample("db_pool_connections_in_use")
        holder = asyncio.create_task(hold_a_transaction())
        await opened.wait()
        held = sample("db_pool_connections_in_use")
        size = sample("db_pool_connections")
        done.set()
        await holder
        released = sample("db_pool_connections_in_use")

    assert unopened is None
    assert idle == 0
    assert held == 1
    assert size is not None
    assert size >= 1
    assert released == 0
