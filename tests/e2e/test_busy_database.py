"""Concurrent writers on the embedded default, SQLite, through the whole stack
(docs/api.md#limits, "SQLite"): a burst of writes waits for the database, never answers 500.

``POST /api/webhooks/{id}/test-events`` is the write a fuzzer found: webhooks-service and its
dispatcher write one SQLite file from two processes, and a transaction that read first and
wrote second met the other's write lock half-way ("database is locked", 500). The stack is
SQLite whatever ``TEST_DATABASE_URL`` says (PostgreSQL has no such lock): a stack of its own,
every service on a SQLite file.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from api_testkit.actors import admin
from api_testkit.stack import DATABASES, Stack, start_stack
from api_testkit.webhooks import webhook_receiver

pytestmark = pytest.mark.processes  # its own SQLite stack; the receiver is on loopback

CALLS = 150
# Rounds of CALLS at once, each after the last has answered: the first finds the dispatcher
# idle, the next ones meet it delivering the earlier ones (where the 500s were).
ROUNDS = 3
# Each answer is waited for: a call that waits for the database is slow, not wrong.
CLIENT_TIMEOUT_S = 60.0


@pytest.fixture(scope="module")
async def sqlite_stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    """Every Procfile service, each on a SQLite file of its own (as ``make run``)."""
    var = tmp_path_factory.mktemp("sqlite-stack")
    files = {
        f"{name.upper()}_DATABASE_URL": f"sqlite://{var / f'{name}.sqlite3'}" for name in DATABASES
    }
    async with start_stack(var, files) as running:
        yield running


async def test_concurrent_test_events_on_sqlite_all_wait_none_fails(
    sqlite_stack: Stack,
) -> None:
    limits = httpx.Limits(max_connections=CALLS, max_keepalive_connections=CALLS)
    async with (
        httpx.AsyncClient(
            base_url=sqlite_stack.gateway_url, timeout=CLIENT_TIMEOUT_S, limits=limits
        ) as gateway,
        webhook_receiver() as hook,
    ):
        headers = await admin(gateway, sqlite_stack)
        created = await gateway.post(
            "/api/webhooks",
            json={"url": hook.url("burst"), "eventTypes": ["orders.order.deleted"]},
            headers=headers,
        )
        assert created.status_code == 201, created.text
        path = f"/api/webhooks/{created.json()['data']['id']}/test-events"

        answers: list[httpx.Response] = []
        for _ in range(ROUNDS):  # after the first, the dispatcher writes the file meanwhile
            answers += await asyncio.gather(
                *(gateway.post(path, headers=headers) for _ in range(CALLS))
            )

        statuses = Counter(answer.status_code for answer in answers)
        failed: list[Any] = [answer.json() for answer in answers if answer.status_code != 202]
        assert statuses == {202: ROUNDS * CALLS}, (statuses, failed[:3])
        # Every one was queued for real: the dispatcher delivers each (and writes each result).
        receipts = await hook.wait_for("burst", ROUNDS * CALLS)
        assert len({receipt.webhook_id for receipt in receipts}) == ROUNDS * CALLS
