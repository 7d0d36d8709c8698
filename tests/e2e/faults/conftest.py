"""A stack of its own for the fault-injection suite, and the way each scenario runs on it.

The suite stops, pauses and restarts this stack's processes (and, on PostgreSQL, the database
server), so it never shares them with the other end-to-end tests. Its gateway gives up on an
upstream after ``GATEWAY_TIMEOUT_S`` and orders-service on the catalog after 1 s, so that a
hang costs seconds, not the production defaults' ten.

``test_postgres_restart.py`` and ``test_orders_database_unreachable.py`` are collected only
when ``TEST_DATABASE_URL`` names a PostgreSQL server: with SQLite there is no database server
to restart or to cut a service off from.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from dataclasses import dataclass, field

import httpx
import pytest

from api_testkit.actors import customer
from api_testkit.catalog import book_ids
from api_testkit.databases import TEST_DATABASE_ENV
from api_testkit.faults.scenario import (
    Findings,
    check_orders,
    check_processes,
    pids,
    through_a_fault,
)
from api_testkit.faults.traffic import Customer, Traffic
from api_testkit.processes import STOP_TIMEOUT_S
from api_testkit.stack import Stack, start_stack

collect_ignore = (
    []
    if os.environ.get(TEST_DATABASE_ENV)
    else ["test_postgres_restart.py", "test_orders_database_unreachable.py"]
)

GATEWAY_TIMEOUT_S = 3.0
CATALOG_TIMEOUT_S = 1.0
ANSWER_SLACK_S = 1.5  # a refusal may take the gateway's timeout, plus this, and no longer
RATE_PER_S = 40.0
OUTAGE_S = 2.5
CUSTOMERS = 4

FINDINGS = pytest.StashKey[list[Findings]]()
REPORTS = pytest.StashKey[list[str]]()


@dataclass
class FaultBench:
    """The fault stack, its customers and books, and the scenarios run so far (``findings``
    of the traffic scenarios, one-line ``reports`` of the others)."""

    stack: Stack
    customers: list[Customer]
    book_ids: list[str]
    findings: list[Findings] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)

    def traffic(self) -> Traffic:
        return Traffic(
            self.stack.gateway_url,
            self.customers,
            self.book_ids,
            rate_per_s=RATE_PER_S,
            answer_within_s=GATEWAY_TIMEOUT_S + ANSWER_SLACK_S,
        )

    async def scenario(
        self,
        name: str,
        *,
        down: Collection[str],
        inject: Callable[[], Awaitable[None]],
        restore: Callable[[], Awaitable[float]],
        outage_s: float = OUTAGE_S,
        restarted: Collection[str] = (),
        notes: list[str] | None = None,
        expect_refusals: bool = True,
    ) -> Findings:
        """Traffic through the fault (``through_a_fault``), then every rule checked."""
        before = pids(self.stack)
        async with self.traffic() as traffic:
            fault_at, back_at = await through_a_fault(traffic, inject, restore, outage_s)
        findings = Findings(
            name,
            traffic.outcomes,
            traffic.origin,
            fault_at,
            back_at,
            frozenset(down),
            notes or [],
            expect_refusals,
        )
        self.findings.append(findings)
        findings.check_traffic()
        check_processes(self.stack, before, set(restarted))
        async with httpx.AsyncClient(base_url=self.stack.gateway_url, timeout=10.0) as gateway:
            await check_orders(gateway, traffic, findings)
        return findings

    async def stopped(self, name: str, outage_s: float = OUTAGE_S) -> Findings:
        """The scenario of one service stopped (SIGTERM) for a while, then started again."""
        service = self.stack.services[name]
        notes: list[str] = []

        async def inject() -> None:
            began = time.monotonic()
            code = await asyncio.to_thread(service.stop)
            notes.append(f"stopping took {time.monotonic() - began:.1f}s")
            # Under traffic too, SIGTERM is enough: requests in progress end, then it exits.
            assert code != -signal.SIGKILL, f"{name} ignored SIGTERM for {STOP_TIMEOUT_S}s"

        async def restore() -> float:
            began = time.monotonic()
            if not service.is_running():
                service.start()
            ready_at = await self.stack.until_ready(name)
            notes.append(f"starting took {ready_at - began:.1f}s")
            return ready_at

        return await self.scenario(
            f"{name} stopped and started",
            down={name},
            inject=inject,
            restore=restore,
            restarted={name},
            notes=notes,
            outage_s=outage_s,
        )

    async def paused(self, name: str, outage_s: float = OUTAGE_S) -> Findings:
        """The scenario of one service frozen (SIGSTOP) for a while, then resumed."""
        service = self.stack.services[name]

        async def inject() -> None:
            service.pause()

        async def restore() -> float:
            service.resume()
            return time.monotonic()

        return await self.scenario(
            f"{name} hanging (SIGSTOP) and resumed",
            down={name},
            inject=inject,
            restore=restore,
            outage_s=outage_s,
        )


@pytest.fixture(scope="session")
async def fault_bench(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> AsyncIterator[FaultBench]:
    overrides = {
        "UPSTREAM_TIMEOUT_S": str(GATEWAY_TIMEOUT_S),
        "ORDERS_UPSTREAM_TIMEOUT_S": str(CATALOG_TIMEOUT_S),
    }
    async with (
        start_stack(tmp_path_factory.mktemp("faults"), overrides) as stack,
        httpx.AsyncClient(base_url=stack.gateway_url, timeout=10.0) as gateway,
    ):
        customers = []
        for _ in range(CUSTOMERS):
            user, headers = await customer(gateway)
            customers.append(Customer(str(user["id"]), headers))
        bench = FaultBench(stack, customers, (await book_ids(gateway))[:5])
        pytestconfig.stash[FINDINGS] = bench.findings
        pytestconfig.stash[REPORTS] = bench.reports
        yield bench


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    findings = terminalreporter.config.stash.get(FINDINGS, [])
    reports = terminalreporter.config.stash.get(REPORTS, [])
    if findings or reports:
        terminalreporter.section("fault injection")
        for line in [finding.summary() for finding in findings] + reports:
            terminalreporter.write_line(line)
