"""Containers stopped, killed, paused or crashed under steady traffic through the gateway.

The rules are the process fault suite's (``api_testkit.faults.scenario``): while a
container is away only 503/504 in the contract's shape, and only for the requests that need
it; every request begun a few seconds after it is back succeeds; every order answered 201
exists exactly once. ``back_at`` is when the container answers its own readiness probe
(asked inside it: its port is not published). A stopped or killed container is started again
by the test (Docker leaves a container stopped by hand alone); a crashed one (its process
exits by itself) is restarted by compose's ``restart: unless-stopped``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import docker.errors
import httpx
import pytest
from docker.models.containers import Container

from api_testkit.actors import customer
from api_testkit.catalog import book_ids
from api_testkit.faults.scenario import Findings, check_orders, through_a_fault
from api_testkit.faults.traffic import Customer, Traffic

from .conftest import ComposeStack

GATEWAY_TIMEOUT_S = 3.0  # UPSTREAM_TIMEOUT_S in deploy/e2e-compose.sh's environment
# An answer may take the gateway's timeout plus this, far more than the process suite's 1.5 s:
# on CI's two shared cores a container starting again (Python importing its packages)
# starves the others for seconds, and after a SIGKILL the gateway's connections to the dead
# address wait for the network to give up. The slowest answer of each case is reported.
ANSWER_SLACK_S = 10.0
FREEZE_ATTEMPTS = 5
RATE_PER_S = 30.0
OUTAGE_S = 2.5
BACK_WITHIN_S = 90.0

# Compose service -> its name in the traffic's NEEDS, and how to ask it "ready?" inside.
SHORT = {
    "users-service": "users",
    "orders-service": "orders",
    "books-graphql": "books",
    "postgres": "postgres",
}
PORTS = {"users-service": 8001, "orders-service": 8002, "books-graphql": 4000}


def ready_command(service: str) -> list[str]:
    if service == "postgres":
        return ["pg_isready", "--host=127.0.0.1", "--username=postgres", "--dbname=postgres"]
    url = f"http://127.0.0.1:{PORTS[service]}/ready"
    return ["python", "-c", f"import urllib.request as r; r.urlopen('{url}', timeout=2)"]


@dataclass
class ContainerBench:
    stack: ComposeStack
    customers: list[Customer]
    book_ids: list[str]
    findings: list[Findings] = field(default_factory=list)

    async def until_ready(self, service: str) -> float:
        """Polls the service's readiness inside its (running) container."""
        deadline = time.monotonic() + BACK_WITHIN_S
        last = ""
        while time.monotonic() < deadline:
            container = self.stack.container(service)
            container.reload()
            if container.status == "running":
                result = await asyncio.to_thread(container.exec_run, ready_command(service))
                if result.exit_code == 0:
                    return time.monotonic()
                assert isinstance(result.output, bytes)  # not streamed
                last = result.output.decode(errors="replace")[-300:]
            else:
                last = f"status {container.status}"
            await asyncio.sleep(0.2)
        raise AssertionError(f"{service} not back within {BACK_WITHIN_S}s: {last}")

    async def scenario(self, service: str, action: str) -> Findings:
        container = self.stack.container(service)
        restarts_before = container.attrs["RestartCount"]
        others = {
            c.name: c.id
            for name in SHORT | {"gateway": "", "redis": ""}
            if name != service
            for c in self.stack.containers(name)
        }
        outage_s = GATEWAY_TIMEOUT_S + 1.0 if action == "pause" else OUTAGE_S
        async with Traffic(
            self.stack.gateway_url,
            self.customers,
            self.book_ids,
            rate_per_s=RATE_PER_S,
            answer_within_s=GATEWAY_TIMEOUT_S + ANSWER_SLACK_S,
        ) as traffic:

            async def injected() -> None:
                await asyncio.to_thread(inject, container, action)

            async def restored() -> float:
                await asyncio.to_thread(restore, container, action)
                return await self.until_ready(service)

            fault_at, back_at = await through_a_fault(traffic, injected, restored, outage_s)
        slowest = max(o.finished - o.started for o in traffic.outcomes)
        findings = Findings(
            f"{service} {action}",
            traffic.outcomes,
            traffic.origin,
            fault_at,
            back_at,
            frozenset({SHORT[service]}),
            [f"slowest answer {slowest:.1f}s"],
        )
        self.findings.append(findings)
        findings.check_traffic()
        container.reload()
        if action == "crash":
            assert container.attrs["RestartCount"] > restarts_before, "compose did not restart it"
        # The others were neither restarted nor replaced.
        for name, container_id in others.items():
            assert container_id is not None  # a created container has its id
            other = self.stack.client.containers.get(container_id)
            assert other.status == "running", f"{name} is {other.status}"
        async with httpx.AsyncClient(base_url=self.stack.gateway_url, timeout=10.0) as client:
            await check_orders(client, traffic, findings)
        return findings


def inject(container: Container, action: str) -> None:
    if action == "stop":
        container.stop(timeout=10)
    elif action == "kill":
        container.kill()
    elif action == "pause":
        pause(container)
    elif action == "crash":
        # The server exits by itself (SIGTERM from inside: the one signal PID 1 handles).
        result = container.exec_run(["sh", "-c", "kill -TERM 1"])
        assert result.exit_code == 0, result.output


def pause(container: Container) -> None:
    """``docker pause``, again if runc could not freeze every process at the first try."""
    for attempt in range(FREEZE_ATTEMPTS):
        try:
            container.pause()
            return
        except docker.errors.APIError as error:
            # "unable to freeze": a process was in an uninterruptible state at that moment.
            if "unable to freeze" not in str(error) or attempt == FREEZE_ATTEMPTS - 1:
                raise
            time.sleep(0.2)


def restore(container: Container, action: str) -> None:
    container.reload()
    if action == "pause":
        if container.status == "paused":
            container.unpause()
    elif action in ("stop", "kill") and container.status != "running":
        container.start()
    # crash: compose's restart policy brings it back; the test only waits.


@pytest.fixture(scope="module")
async def bench(compose_stack: ComposeStack) -> AsyncIterator[ContainerBench]:
    async with httpx.AsyncClient(base_url=compose_stack.gateway_url, timeout=10.0) as gateway:
        customers = []
        for _ in range(4):
            user, headers = await customer(gateway)
            customers.append(Customer(str(user["id"]), headers))
        books = (await book_ids(gateway))[:5]
    bench = ContainerBench(compose_stack, customers, books)
    yield bench
    for findings in bench.findings:
        print(findings.summary())


# Every container stopped, killed and paused; one crash proves the restart policy (the same
# for every service: x-app-service).
CASES = [
    (service, action)
    for service in ("orders-service", "books-graphql", "users-service", "postgres")
    for action in ("stop", "kill", "pause")
] + [("orders-service", "crash")]


@pytest.mark.parametrize(("service", "action"), CASES, ids=[f"{s}-{a}" for s, a in CASES])
async def test_a_container_away_costs_only_contract_refusals_and_recovers(
    bench: ContainerBench, service: str, action: str
) -> None:
    findings = await bench.scenario(service, action)
    print(findings.summary())
