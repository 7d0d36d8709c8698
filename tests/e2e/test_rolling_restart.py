"""Drain with real processes: two users-service replicas behind one gateway, under steady
authenticated reads; each in turn is stopped with SIGTERM and started again (a rolling
restart): not one request fails.

The database outage half of the probes' story is in faults/test_orders_database_unreachable.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from api_testkit.actors import customer
from api_testkit.stack import Stack, start_stack

CLIENTS = 4
PAUSE_S = 0.1  # per client between requests: about 40 requests a second in all
SETTLE_S = 1.0  # steady traffic before and after each restart


@pytest.fixture
async def replicated(tmp_path: Path) -> AsyncIterator[Stack]:
    async with start_stack(tmp_path, users_replicas=2) as stack:
        yield stack


@dataclass
class Reads:
    """What the steady clients sent, and every answer that was not 200."""

    sent: int = 0
    failures: list[str] = field(default_factory=list)


async def _read_steadily(
    gateway: str, path: str, headers: dict[str, str], stop: asyncio.Event, reads: Reads
) -> None:
    async with httpx.AsyncClient(base_url=gateway, timeout=15.0) as client:
        while not stop.is_set():
            reads.sent += 1
            try:
                response = await client.get(path, headers=headers)
                if response.status_code != 200:
                    reads.failures.append(f"{response.status_code} {response.text[:200]}")
            except httpx.TransportError as error:
                reads.failures.append(repr(error))
            await asyncio.sleep(PAUSE_S)


async def test_a_rolling_restart_of_users_service_fails_no_request(replicated: Stack) -> None:
    async with httpx.AsyncClient(base_url=replicated.gateway_url, timeout=15.0) as gateway:
        me, headers = await customer(gateway)
    stop, reads = asyncio.Event(), Reads()
    path = f"/api/users/{me['id']}"
    clients = [
        asyncio.create_task(_read_steadily(replicated.gateway_url, path, headers, stop, reads))
        for _ in range(CLIENTS)
    ]
    try:
        await asyncio.sleep(SETTLE_S)
        for name in ("users", "users-2"):
            service = replicated.services[name]
            exit_code = await asyncio.to_thread(service.stop)  # SIGTERM, then waits
            assert exit_code == 0, service.log_tail()
            service.start()
            await replicated.until_ready(name)
            await asyncio.sleep(SETTLE_S)
    finally:
        stop.set()
        await asyncio.gather(*clients)

    assert reads.failures == []
    assert reads.sent >= 100
