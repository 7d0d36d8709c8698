"""Customers placing and reading orders through the gateway while an operator changes the
deployment under them (a rolling upgrade, a node lost), and what they saw: the load of the
deployment drills (deploy/rolling_upgrade.py, deploy/swarm/drills.py).

A ``POST /orders`` answered 503 is retried with its ``Idempotency-Key`` after
``Retry-After`` (docs/api.md): that is the documented way through a replica going away, and
anything else is a failure. Through an outage (a node lost takes its connections with it)
a client also retries what the network lost, and a 502 or 504 (the outcome unknown) with the
same key, which makes it safe; a read that fails then is trouble, not a failure.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httpx

WRITERS = 3
READERS = 2
PAUSE_S = 0.05  # per client between requests
RETRY_ATTEMPTS = 20
OUTAGE_RETRY_DELAY_S = 1.0
OUTCOME_UNKNOWN = (502, 504)


@dataclass
class Traffic:
    """What the clients sent and got back; times are ``time.monotonic()``."""

    requests: int = 0
    writes_acknowledged: list[str] = field(default_factory=list)
    retries_503: int = 0
    outage_retries: int = 0  # writes retried after a connection error, 502 or 504
    reads_failed_in_outage: int = 0
    failures: list[str] = field(default_factory=list)
    trouble_at: list[float] = field(default_factory=list)  # each failure or retry

    def trouble(self, what: str | None = None) -> None:
        """A retry (``what`` None) or a failure happened now."""
        self.trouble_at.append(time.monotonic())
        if what is not None:
            self.failures.append(what)


@dataclass
class OrderTraffic:
    """Writers placing orders and readers reading them, as one customer, until stopped."""

    gateway: httpx.AsyncClient
    headers: dict[str, str]
    book: str
    tolerate_outage: bool = False
    traffic: Traffic = field(default_factory=Traffic)

    async def place_orders(self, stop: asyncio.Event) -> None:
        """Place orders until stopped, each retried with its key while the answer is 503."""
        traffic = self.traffic
        while not stop.is_set():
            key = str(uuid.uuid4())
            for _ in range(RETRY_ATTEMPTS):
                traffic.requests += 1
                try:
                    response = await self.gateway.post(
                        "/orders",
                        json={"items": [{"bookId": self.book, "quantity": 1}]},
                        headers=self.headers | {"idempotency-key": key},
                    )
                except httpx.TransportError as error:
                    if not self.tolerate_outage:
                        traffic.trouble(f"POST /orders: {error!r}")
                        break
                    await self._outage_retry()
                    continue
                if self.tolerate_outage and response.status_code in OUTCOME_UNKNOWN:
                    await self._outage_retry()
                    continue
                if response.status_code == 503:
                    traffic.retries_503 += 1
                    traffic.trouble()
                    await asyncio.sleep(float(response.headers.get("retry-after", "1")))
                    continue
                if response.status_code == 201:
                    traffic.writes_acknowledged.append(response.json()["data"]["id"])
                else:
                    traffic.trouble(f"POST /orders: {response.status_code} {response.text}")
                break
            else:
                traffic.trouble(f"POST /orders: no answer in {RETRY_ATTEMPTS} attempts")
            await asyncio.sleep(PAUSE_S)

    async def _outage_retry(self) -> None:
        self.traffic.outage_retries += 1
        self.traffic.trouble()
        await asyncio.sleep(OUTAGE_RETRY_DELAY_S)

    def _read_failed(self, what: str) -> None:
        if self.tolerate_outage:
            self.traffic.reads_failed_in_outage += 1
            self.traffic.trouble()
        else:
            self.traffic.trouble(what)

    async def read_orders(self, stop: asyncio.Event) -> None:
        """Read the latest acknowledged order, and the list, until stopped."""
        traffic = self.traffic
        while not stop.is_set():
            paths = ["/orders?limit=5"]
            if traffic.writes_acknowledged:
                paths.append(f"/orders/{traffic.writes_acknowledged[-1]}")
            for path in paths:
                traffic.requests += 1
                try:
                    response = await self.gateway.get(path, headers=self.headers)
                except httpx.TransportError as error:
                    self._read_failed(f"GET {path}: {error!r}")
                    continue
                if response.status_code != 200:
                    self._read_failed(f"GET {path}: {response.status_code} {response.text}")
            await asyncio.sleep(PAUSE_S)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Traffic]:
        """The clients at work for the block's duration."""
        stop = asyncio.Event()
        clients = [
            *(self.place_orders(stop) for _ in range(WRITERS)),
            *(self.read_orders(stop) for _ in range(READERS)),
        ]
        tasks = [asyncio.create_task(client) for client in clients]
        try:
            yield self.traffic
        finally:
            stop.set()
            await asyncio.gather(*tasks)

    async def lost_writes(self) -> list[str]:
        """The acknowledged orders that cannot be read back (each with its answer)."""
        lost = []
        for order in self.traffic.writes_acknowledged:
            response = await self.gateway.get(f"/orders/{order}", headers=self.headers)
            if response.status_code != 200 or response.json()["data"]["id"] != order:
                lost.append(f"{order}: {response.status_code}")
        return lost

    async def orders_stored(self) -> int:
        """How many orders the customer has: each acknowledged one stored once makes it
        exactly the number acknowledged."""
        response = await self.gateway.get("/orders?limit=1", headers=self.headers)
        response.raise_for_status()
        total: int = response.json()["page"]["total"]
        return total
