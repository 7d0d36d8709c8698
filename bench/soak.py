"""Soak test: mixed traffic at half the measured capacity for ten minutes; writes docs/soak.md.

    make soak                       # 10 minutes
    SOAK_SECONDS=120 make soak      # a shorter run

The stack is started as ``make run`` starts it (every Procfile line as its own process, each
service migrating its own fresh database), on free ports: PostgreSQL when
``SOAK_DATABASE_URL`` or ``TEST_DATABASE_URL`` names a server, else SQLite files.

1. Capacity: ``SOAK_CAPACITY_SECONDS`` (15) of the mix at full speed, ``SOAK_CONCURRENCY``
   (32) requests always in flight; what completes per second is the capacity.
2. Soak: ``SOAK_SECONDS`` (600) of the same mix at ``SOAK_LOAD`` (0.5) of that capacity, at
   a steady arrival rate: reads of users, orders and books, and order creation (half of
   them with an Idempotency-Key).
3. Every minute: requests, errors, p50/p99 latency, and the resident memory (RSS) of every
   process. The run passes when there is no error at all, no process goes above 100 MB
   and none grows by more than ``SOAK_RSS_GROWTH_MB`` (10) after the first minute.

The load generator runs on the same machine as the stack: the capacity is the platform's
as this client sees it, not a benchmark (``make bench`` is that).
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx

from api_testkit.actors import log_in, sign_up
from api_testkit.callers import bearer
from api_testkit.databases import TEST_DATABASE_ENV, server_started_at
from api_testkit.paths import REPO
from api_testkit.stack import Stack, start_stack

SOAK_SECONDS = float(os.environ.get("SOAK_SECONDS", "600"))
CAPACITY_SECONDS = float(os.environ.get("SOAK_CAPACITY_SECONDS", "15"))
CONCURRENCY = int(os.environ.get("SOAK_CONCURRENCY", "32"))
LOAD = float(os.environ.get("SOAK_LOAD", "0.5"))
RSS_LIMIT_MB = 100.0
RSS_GROWTH_MB = float(os.environ.get("SOAK_RSS_GROWTH_MB", "10"))
OUTPUT = Path(os.environ.get("SOAK_OUTPUT", REPO / "docs" / "soak.md"))
CUSTOMERS = 8
PASSWORD = "soak-customer-password"
TOKEN_REFRESH_S = 780.0  # tokens live 900 s: a 10-minute soak logs in only before it starts
RSS_SAMPLE_S = 5.0
MAX_IN_FLIGHT = 512
PROCESSES = ("gateway", "users", "orders", "books")
MB = 1_000_000

LOGIN_NOTE = (
    "Logins are not part of the mix: the customers log in before the soak starts, and again",
    f"every {TOKEN_REFRESH_S / 60:.0f} minutes in longer runs (tokens live 15). A login holds",
    "64 MiB in users-service for the ~0.1 s of its Argon2id hash (the memory cost of RFC 9106's",
    "profile, `ARGON2_MEMORY_KIB`), one per concurrent login, up to the 6 threads of the",
    "default pool on 2 cores; the memory is returned as soon as the hash is done. Those",
    "moments are not sampled: this test looks for growth, and a login is a peak, not a leak.",
)

# What the mix is made of, and how often each request comes up.
WEIGHTS = {
    "users.read": 20,
    "orders.list": 15,
    "orders.read": 15,
    "books.list": 15,
    "books.read": 15,
    "orders.create": 20,
}
BOOKS_QUERY = {"query": "{ books { id title author } }"}
BOOK_QUERY = "query Book($id: ID!) { book(id: $id) { id title author } }"


@dataclass
class Customer:
    id: str
    email: str
    headers: dict[str, str]
    orders: list[str] = field(default_factory=list)


class ExpectedError(Exception):
    """An answer that is not the one a healthy platform gives."""


@dataclass
class Minute:
    latencies_ms: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    rss_mb: dict[str, float] = field(default_factory=dict)  # the highest sample of the minute


class Mix:
    """One request of the mix at a time, as some customer."""

    def __init__(self, client: httpx.AsyncClient, customers: list[Customer], books: list[str]):
        self.client = client
        self.customers = customers
        self.books = books
        self.random = random.Random(8)  # noqa: S311 - a load shape, not a secret: same every run
        self.kinds = list(WEIGHTS)
        self.weights = list(WEIGHTS.values())

    async def one(self) -> None:
        kind = self.random.choices(self.kinds, self.weights)[0]
        customer = self.random.choice(self.customers)
        if kind == "orders.read" and not customer.orders:
            kind = "orders.create"
        response = await self._send(kind, customer)
        expected = 201 if kind == "orders.create" else 200
        if response.status_code != expected:
            raise ExpectedError(f"{kind} {response.status_code} {response.text[:160]}")
        body = response.json()
        if kind.startswith("books") and (body.get("errors") or not body.get("data")):
            raise ExpectedError(f"{kind} 200 with errors {response.text[:160]}")
        if kind == "orders.create":
            customer.orders.append(body["data"]["id"])
            del customer.orders[:-50]

    async def _send(self, kind: str, customer: Customer) -> httpx.Response:
        if kind == "users.read":
            return await self.client.get(f"/api/users/{customer.id}", headers=customer.headers)
        if kind == "orders.list":
            return await self.client.get("/orders?limit=10", headers=customer.headers)
        if kind == "orders.read":
            order_id = self.random.choice(customer.orders)
            return await self.client.get(f"/orders/{order_id}", headers=customer.headers)
        if kind == "books.list":
            return await self.client.post("/graphql", json=BOOKS_QUERY)
        if kind == "books.read":
            variables = {"id": self.random.choice(self.books)}
            return await self.client.post(
                "/graphql", json={"query": BOOK_QUERY, "variables": variables}
            )
        headers = dict(customer.headers)
        if self.random.random() < 0.5:
            headers["Idempotency-Key"] = uuid.uuid4().hex
        item = {"bookId": self.random.choice(self.books), "quantity": self.random.randint(1, 3)}
        return await self.client.post(
            "/orders", json={"items": [item], "note": "soak"}, headers=headers
        )


class Recorder:
    """Outcomes per minute since ``origin``."""

    def __init__(self) -> None:
        self.origin = time.monotonic()
        self.minutes: dict[int, Minute] = defaultdict(Minute)
        self.requests = 0
        self.logins_in_progress = False

    def minute(self, moment: float) -> Minute:
        return self.minutes[int((moment - self.origin) // 60)]

    async def timed(self, request: Callable[[], Awaitable[None]]) -> None:
        started = time.monotonic()
        try:
            await request()
        except (ExpectedError, httpx.HTTPError, ValueError) as error:
            text = str(error) or type(error).__name__
            self.minute(started).errors[text[:120]] += 1
        else:
            self.minute(started).latencies_ms.append((time.monotonic() - started) * 1000)
        self.requests += 1


async def postgres_started_at() -> datetime | None:
    """When the PostgreSQL server under test last started (None with SQLite)."""
    url = os.environ.get(TEST_DATABASE_ENV)
    return await server_started_at(url) if url else None


def rss_mb(pid: int) -> float:
    """Resident memory of a process group (the service and any child), in MB."""
    total_kib = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) != pid:  # the process group id
                continue
            for line in (stat.parent / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kib += int(line.split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total_kib * 1024 / MB


async def sample_memory(stack: Stack, recorder: Recorder) -> None:
    while True:
        minute = recorder.minute(time.monotonic())
        for name in PROCESSES:
            pid = stack.services[name].pid
            if name == "users" and recorder.logins_in_progress:
                continue  # Argon2id holds 64 MiB per login while it hashes: see LOGIN_NOTE
            if pid is not None:
                minute.rss_mb[name] = max(minute.rss_mb.get(name, 0.0), rss_mb(pid))
        await asyncio.sleep(RSS_SAMPLE_S)


async def customers_of(client: httpx.AsyncClient) -> list[Customer]:
    customers = []
    for number in range(CUSTOMERS):
        email = f"soak-{number}-{uuid.uuid4().hex[:8]}@example.com"
        user = await sign_up(client, name=f"Soak {number}", email=email, password=PASSWORD)
        customers.append(Customer(user["id"], email, {}))
    await log_in_all(client, customers)
    return customers


async def log_in_all(client: httpx.AsyncClient, customers: list[Customer]) -> None:
    for customer in customers:
        tokens = await log_in(client, customer.email, PASSWORD)
        customer.headers = bearer(tokens["accessToken"])


async def keep_logged_in(
    client: httpx.AsyncClient, customers: list[Customer], recorder: Recorder
) -> None:
    while True:
        await asyncio.sleep(TOKEN_REFRESH_S)
        recorder.logins_in_progress = True
        try:
            await log_in_all(client, customers)
        finally:
            recorder.logins_in_progress = False


async def at_full_speed(mix: Mix, seconds: float) -> tuple[float, Recorder]:
    """Requests back to back from ``CONCURRENCY`` workers; completed requests per second."""
    recorder = Recorder()
    deadline = recorder.origin + seconds

    async def worker() -> None:
        while time.monotonic() < deadline:
            await recorder.timed(mix.one)

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return recorder.requests / (time.monotonic() - recorder.origin), recorder


async def at_steady_rate(mix: Mix, rate_per_s: float, seconds: float, recorder: Recorder) -> int:
    """Requests arriving every 1/rate seconds for ``seconds``; returns how many were skipped."""
    in_flight: set[asyncio.Task[None]] = set()
    skipped = 0
    interval = 1.0 / rate_per_s
    next_at = recorder.origin
    deadline = recorder.origin + seconds
    while next_at < deadline:
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        next_at += interval
        if len(in_flight) >= MAX_IN_FLIGHT:
            skipped += 1  # the platform is not keeping up: it shows in the latencies too
            continue
        task = asyncio.create_task(recorder.timed(mix.one))
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)
    await asyncio.gather(*in_flight)
    return skipped


def _count(minute: Minute) -> int:
    return len(minute.latencies_ms) + sum(minute.errors.values())


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


@dataclass
class Verdict:
    passed: bool
    lines: list[str]


def judge(recorder: Recorder) -> Verdict:
    minutes = [recorder.minutes[index] for index in sorted(recorder.minutes)]
    errors = sum(sum(minute.errors.values()) for minute in minutes)
    lines = [f"errors: {errors} (must be 0)"]
    passed = errors == 0
    for name in PROCESSES:
        samples = [minute.rss_mb[name] for minute in minutes if name in minute.rss_mb]
        if not samples:
            continue
        highest = max(samples)
        growth = samples[-1] - samples[0]
        ok = highest <= RSS_LIMIT_MB and growth <= RSS_GROWTH_MB
        passed = passed and ok
        lines.append(
            f"{name}: RSS {samples[0]:.1f} MB after the first minute, {samples[-1]:.1f} MB at the"
            f" end (growth {growth:+.1f} MB, limit {RSS_GROWTH_MB:.0f}), highest {highest:.1f} MB"
            f" (limit {RSS_LIMIT_MB:.0f}): {'ok' if ok else 'FAILED'}"
        )
    return Verdict(passed, lines)


def report(
    recorder: Recorder,
    verdict: Verdict,
    *,
    database: str,
    capacity: float,
    capacity_errors: int,
    rate: float,
    skipped: int,
    duration_s: float,
    postgres_restarted_at: datetime | None,
) -> str:
    minutes = [index for index in sorted(recorder.minutes) if _count(recorder.minutes[index])]
    all_latencies = [ms for index in minutes for ms in recorder.minutes[index].latencies_ms]
    header = " | ".join(["minute", "requests", "errors", "p50 ms", "p99 ms"])
    header += " | " + " | ".join(f"{name} RSS MB" for name in PROCESSES)
    rows = [f"| {header} |", "|" + "---|" * (5 + len(PROCESSES))]
    for index in minutes:
        minute = recorder.minutes[index]
        cells = [
            str(index + 1),
            str(_count(minute)),
            str(sum(minute.errors.values())),
            f"{percentile(minute.latencies_ms, 0.50):.1f}",
            f"{percentile(minute.latencies_ms, 0.99):.1f}",
            *(f"{minute.rss_mb.get(name, float('nan')):.1f}" for name in PROCESSES),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    error_kinds: Counter[str] = Counter()
    for index in minutes:
        error_kinds.update(recorder.minutes[index].errors)
    errors_section = (
        ["", "Errors seen:", "", *(f"- {count} x `{text}`" for text, count in error_kinds.items())]
        if error_kinds
        else []
    )
    cores = os.cpu_count() or 1
    return "\n".join(
        [
            "# Soak test",
            "",
            "`make soak` runs the whole platform, started as `make run` starts it, under mixed",
            "traffic (reads of users, orders and books; order creation, half of it with an",
            "Idempotency-Key) at half of the capacity it measures first, and records every",
            "minute the requests, errors, latency percentiles and resident memory of each",
            "process. It passes with no error at all, no process above 100 MB, and no process",
            f"growing by more than {RSS_GROWTH_MB:.0f} MB after the first minute. Settings:",
            "`SOAK_SECONDS` (600), `SOAK_CAPACITY_SECONDS` (15), `SOAK_LOAD` (0.5),",
            "`SOAK_CONCURRENCY` (32), `SOAK_DATABASE_URL` (else `TEST_DATABASE_URL`, else",
            "SQLite). The load generator shares the machine with the stack.",
            "",
            *LOGIN_NOTE,
            "",
            "## Latest run",
            "",
            f"- {time.strftime('%Y-%m-%d')}, {cores} cores, Python {sys.version.split()[0]},"
            f" {database}",
            f"- capacity measured: {capacity:.0f} requests/s ({CAPACITY_SECONDS:.0f} s at"
            f" {CONCURRENCY} concurrent requests, {capacity_errors} errors)",
            f"- soak: {duration_s / 60:.1f} minutes at {rate:.0f} requests/s"
            f" ({LOAD:.0%} of capacity), {recorder.requests} requests"
            + (f", {skipped} not sent (too many in flight)" if skipped else ""),
            f"- overall latency: p50 {percentile(all_latencies, 0.5):.1f} ms,"
            f" p99 {percentile(all_latencies, 0.99):.1f} ms",
            *(
                [
                    f"- PostgreSQL was restarted during the run (last start"
                    f" {postgres_restarted_at:%H:%M:%S} UTC), not by this test: the server is"
                    " shared, and the fault suite restarts it"
                ]
                if postgres_restarted_at is not None
                else []
            ),
            f"- verdict: **{'passed' if verdict.passed else 'FAILED'}**",
            "",
            *rows,
            "",
            *(f"- {line}" for line in verdict.lines),
            *errors_section,
            "",
        ]
    )


async def soak() -> tuple[str, bool]:
    """Run the soak; the report, and whether it passed."""
    if os.environ.get("SOAK_DATABASE_URL"):
        os.environ[TEST_DATABASE_ENV] = os.environ["SOAK_DATABASE_URL"]
    database = "PostgreSQL" if os.environ.get(TEST_DATABASE_ENV) else "SQLite"
    var = Path(tempfile.mkdtemp(prefix="soak-"))
    print(f"Starting the stack ({database}); logs in {var}", flush=True)
    server_started_at = await postgres_started_at()
    async with start_stack(var) as stack:
        limits = httpx.Limits(max_connections=MAX_IN_FLIGHT, max_keepalive_connections=64)
        async with httpx.AsyncClient(
            base_url=stack.gateway_url, timeout=30.0, limits=limits
        ) as client:
            books = await client.post("/graphql", json={"query": "{ books { id } }"})
            book_ids = [book["id"] for book in books.json()["data"]["books"]]
            customers = await customers_of(client)
            mix = Mix(client, customers, book_ids)

            print(f"Measuring capacity for {CAPACITY_SECONDS:.0f} s...", flush=True)
            capacity, flat_out = await at_full_speed(mix, CAPACITY_SECONDS)
            capacity_errors = sum(sum(m.errors.values()) for m in flat_out.minutes.values())
            rate = capacity * LOAD
            print(
                f"Capacity {capacity:.0f} requests/s; soaking at {rate:.0f} requests/s "
                f"for {SOAK_SECONDS:.0f} s...",
                flush=True,
            )
            recorder = Recorder()
            refresher = asyncio.create_task(keep_logged_in(client, customers, recorder))
            sampler = asyncio.create_task(sample_memory(stack, recorder))
            skipped = await at_steady_rate(mix, rate, SOAK_SECONDS, recorder)
            duration_s = time.monotonic() - recorder.origin
            sampler.cancel()
            refresher.cancel()
            await asyncio.gather(sampler, refresher, return_exceptions=True)

    restarted_at = await postgres_started_at()
    verdict = judge(recorder)
    text = report(
        recorder,
        verdict,
        database=database,
        capacity=capacity,
        capacity_errors=capacity_errors,
        rate=rate,
        skipped=skipped,
        duration_s=duration_s,
        postgres_restarted_at=restarted_at if restarted_at != server_started_at else None,
    )
    return text, verdict.passed


def main() -> None:
    text, passed = asyncio.run(soak())
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text)
    print(text)
    print(f"Written to {OUTPUT}")
    raise SystemExit(0 if passed else 1)


if __name__ == "__main__":
    main()
