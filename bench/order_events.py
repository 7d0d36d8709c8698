"""What events cost order creation, and how long an order's event takes to reach a webhook
and a customer's event stream.

    uv run python bench/order_events.py [--runs 3] [--duration 6]
    uv run python bench/run.py events [--runs 3] [--duration 6]   # into docs/benchmarks.md

1. Throughput, events on vs off: bench/orders.py's ``POST /orders`` through three gateways
   in front of three orders-services, back to back in each run. *On* is the platform's own
   orders-service: each order's event written to the outbox in the order's transaction, its
   relay publishing to the platform's nats-server. *Off* is a second orders-service started
   beside it on the same database with ``EVENTS_ENABLED=false`` (no outbox rows, no relay,
   no NATS connection, no consumer). *Recorded, not relayed* is a third, on a database of
   its own, whose NATS is unreachable: the outbox rows are written and wait, which splits
   the cost between writing the events and relaying them. The webhooks dispatcher does not
   run here: its cost grows with the endpoints, not with the order path. Gateways and wrk
   on core 0; services and NATS on core 1.
2. Latency, commit to webhook: a platform with webhooks-service and its dispatcher; an admin
   registers, through the gateway, an endpoint for ``orders.order.created`` served by an
   aiohttp receiver in this process on loopback; orders are created through the gateway at
   a steady ``RATE_PER_S`` for the run's duration. For each event the receiver notes when
   its POST arrived, and the latency is taken two ways: from the event's CloudEvents ``time``
   (taken by ``Outbox.record`` inside the order's transaction, just before the commit: an
   upper bound of commit to webhook) and from the moment the client had its 201 (after the
   commit and the way back through the gateway: a lower bound). One clock: every process
   runs on this machine. One order goes all the way first, unmeasured; the stages of each
   event's way are read from the outbox's and the dispatcher's rows afterwards. The same
   customer holds ``GET /api/events/stream`` open through the gateway all along
   (``event_stream``): each order's event there is timed the same two ways.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import asyncpg
import httpx
from event_stream import streaming
from harness import LOAD_CORE, SERVER_CORE, Spread, Wrk, alternate, started
from orders import SCRIPT, book_ids
from report import Ratio, Samples, Section, cli_options, wrk_table
from stack import (
    ADMIN_EMAIL,
    ADMIN_PASSWORD,
    PYTHON,
    Stack,
    log_in,
    migrate,
    new_customer,
    platform,
    postgres_database,
)

from api_testkit.events import eventually
from api_testkit.ports import free_port
from api_testkit.readiness import wait_ready
from api_testkit.webhooks import WebhookReceiver, webhook_receiver

CONNECTIONS = 32
PEERS = {
    "on": "POST /orders, events on (outbox + relay to NATS)",
    "outbox": "POST /orders, events recorded, not relayed (NATS unreachable)",
    "off": "POST /orders, events off (`EVENTS_ENABLED=false`)",
}
TARGET_RATIO = 0.9
BEFORE_RATIO = 0.78
# The processes of each peer on the server core (core 1), whose CPU an order costs there.
SERVER_CORE_PROCESSES = {
    "on": ("orders", "books", "nats"),
    "outbox": ("orders-outbox", "books"),
    "off": ("orders-off", "books"),
}
RATE_PER_S = 20.0
CREATED = "orders.order.created"
# The latency targets (p99, ms, from the event's time) and the figures before the relay and
# the dispatcher woke on commit and the stream existed (docs/benchmarks.md, 2026-11).
TARGET_P99_MS = 20.0
BEFORE_WEBHOOK_MS = (65.0, 114.0)  # p50, p99
EVENT_TIME = "the event's `time` (in the transaction, before the commit)"
RESPONSE = "the client's 201 (after the commit)"
NAN = float("nan")
# After the last order, how long the receiver may still wait for the last events.
WARM_UP_S = 60.0
STAGES = {
    "relay": "event `time` → outbox row marked published (relay: poll, publish, ack, mark)",
    "intake": "marked published → delivery row written (dispatcher's pull consumer)",
    "loop": "delivery row → first attempt begins (dispatcher's delivery loop)",
    "post": "attempt begins → receiver has the POST",
}
# Timestamps of each order's event on its way, from the services' own databases.
OUTBOX_TIMES = "SELECT subject, published_at FROM outbox_events WHERE type = 'orders.order.created'"
DELIVERY_TIMES = (
    "SELECT d.subject, d.created_at, min(a.attempted_at) AS attempted_at "
    "FROM webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id "
    "GROUP BY d.subject, d.created_at"
)


@contextmanager
def orders_beside(stack: Stack, peer: str, variables: dict[str, str]) -> Iterator[str]:
    """A gateway's base URL in front of a second orders-service started with ``variables``
    (``orders-<peer>`` and ``gateway-<peer>``); both stop when the block ends."""
    orders_port, gateway_port, admin_port = free_port(), free_port(), free_port()
    orders_env = stack.environment | {"ORDERS_PORT": str(orders_port), **variables}
    gateway_env = stack.environment | {
        "GATEWAY_PORT": str(gateway_port),
        "GATEWAY_ADMIN_PORT": str(admin_port),
        "ORDERS_SERVICE_URL": f"http://127.0.0.1:{orders_port}",
    }
    names = (f"orders-{peer}", f"gateway-{peer}")
    with ExitStack() as extras:
        for name, module, env, core, ready in (
            (names[0], "orders_service", orders_env, SERVER_CORE, orders_port),
            (names[1], "gateway", gateway_env, LOAD_CORE, admin_port),
        ):
            process = extras.enter_context(
                started(name, [PYTHON, "-m", module, "serve"], env, core)
            )
            wait_ready(f"http://127.0.0.1:{ready}/ready", process.exited)
            stack.processes[name] = process
        try:
            yield f"http://127.0.0.1:{gateway_port}"
        finally:
            for name in names:
                stack.processes.pop(name, None)


@contextmanager
def peers(stack: Stack) -> Iterator[dict[str, str]]:
    """Each peer's gateway URL: the platform's own (on) and two started beside it."""
    with ExitStack() as extras:
        # Its own database: the platform's relay would publish its rows otherwise.
        outbox_database = extras.enter_context(postgres_database("orders_outbox"))
        outbox_env = {"ORDERS_DATABASE_URL": outbox_database}
        migrate("orders_service", stack.environment | outbox_env)
        # Nothing listens there: the relay backs off (at most every 10 s) and rows wait.
        outbox_env["NATS_URL"] = f"nats://127.0.0.1:{free_port()}"
        yield {
            "on": stack.urls["gateway"],
            "outbox": extras.enter_context(orders_beside(stack, "outbox", outbox_env)),
            "off": extras.enter_context(orders_beside(stack, "off", {"EVENTS_ENABLED": "false"})),
        }


def measure_throughput(stack: Stack, wrk: Wrk, samples: Samples) -> None:
    """One run: every peer at 32 connections, back to back, in an order that turns."""
    caller = new_customer(stack.urls["users"])
    books = ", ".join(json.dumps(book) for book in book_ids(stack.urls["gateway"]))
    with peers(stack) as urls, tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "orders.lua"
        script.write_text(SCRIPT % (books, caller.token))
        watched = {
            "on": ["gateway", "orders", "books", "nats"],
            "outbox": ["gateway-outbox", "orders-outbox", "books"],
            "off": ["gateway-off", "orders-off", "books"],
        }
        for url in urls.values():
            wrk.warm(url + "/orders", script=script)
        run = len(samples.get(("on", CONNECTIONS), []))
        for peer in alternate(list(PEERS), run):
            samples.setdefault((peer, CONNECTIONS), []).append(
                wrk(
                    PEERS[peer],
                    urls[peer] + "/orders",
                    connections=CONNECTIONS,
                    script=script,
                    watch=[stack.processes[name] for name in watched[peer]],
                )
            )


@dataclass
class Latencies:
    """Per run: commit-to-webhook latencies (ms), from the event's ``time`` and from the 201."""

    from_event_time: list[list[float]] = field(default_factory=list)
    from_response: list[list[float]] = field(default_factory=list)
    # The same orders' events at a customer's event stream (GET /api/events/stream).
    stream_from_event_time: list[list[float]] = field(default_factory=list)
    stream_from_response: list[list[float]] = field(default_factory=list)
    streamed: list[int] = field(default_factory=list)
    # Where the time went (ms), by stage (STAGES), from the outbox's and deliveries' rows.
    stages: dict[str, list[list[float]]] = field(default_factory=dict)
    created: list[int] = field(default_factory=list)
    received: list[int] = field(default_factory=list)


def _arrivals(hook: WebhookReceiver) -> dict[str, tuple[float, float]]:
    """Order id -> (when its event arrived, the event's time), epoch s; first arrival only."""
    arrivals: dict[str, tuple[float, float]] = {}
    for receipt in hook.received["hook"]:
        event = receipt.event
        event_time = datetime.fromisoformat(event["time"]).timestamp()
        arrivals.setdefault(event["subject"], (receipt.arrived, event_time))  # a repeat is not news
    return arrivals


async def _measure_latency(stack: Stack, duration_s: int, latencies: Latencies) -> None:
    gateway = stack.urls["gateway"]
    caller = new_customer(stack.urls["users"])
    async with (
        webhook_receiver() as hook,
        httpx.AsyncClient(base_url=gateway, timeout=30) as client,
        streaming(gateway, caller.headers, CREATED) as stream,
    ):
        admin = {"Authorization": f"Bearer {log_in(gateway, ADMIN_EMAIL, ADMIN_PASSWORD)}"}
        registered = await client.post(
            "/api/webhooks",
            json={"url": hook.url(), "eventTypes": [CREATED]},
            headers=admin,
        )
        registered.raise_for_status()
        books = book_ids(gateway)
        responded: dict[str, float] = {}  # order id -> when its 201 arrived, epoch s

        async def place(n: int) -> None:
            body = {"items": [{"bookId": books[n % len(books)], "quantity": 1}]}
            response = await client.post("/orders", json=body, headers=caller.headers)
            done = time.time()
            response.raise_for_status()
            responded[response.json()["data"]["id"]] = done

        # Warm-up: one order all the way to the receiver before the clock starts (the
        # dispatcher's intake may still be waiting for the ORDERS stream to exist).
        await place(0)
        await asyncio.wait_for(hook.wait_for("hook", 1), WARM_UP_S)
        hook.received.clear()
        responded.clear()
        stream.arrivals.clear()
        count = int(RATE_PER_S * duration_s)
        began = time.monotonic()
        tasks = []
        for n in range(count):
            # Open loop: each order at its time, whether or not the last one answered.
            await asyncio.sleep(max(0.0, began + n / RATE_PER_S - time.monotonic()))
            tasks.append(asyncio.create_task(place(n)))
        await asyncio.gather(*tasks)

        async def all_arrived() -> bool:
            return responded.keys() <= _arrivals(hook).keys() & stream.arrivals.keys()

        with suppress(AssertionError):  # what is missing then is reported as missing
            await eventually(all_arrived, "every order's event at the receiver and the stream")
        arrivals = _arrivals(hook)
        streamed = dict(stream.arrivals)
    on_stream = [order for order in responded if order in streamed]
    latencies.stream_from_event_time.append(
        [(streamed[order][0] - streamed[order][1]) * 1000 for order in on_stream]
    )
    latencies.stream_from_response.append(
        [(streamed[order][0] - responded[order]) * 1000 for order in on_stream]
    )
    latencies.streamed.append(len(on_stream))
    mine = [order for order in responded if order in arrivals]
    latencies.from_event_time.append(
        [(arrivals[order][0] - arrivals[order][1]) * 1000 for order in mine]
    )
    latencies.from_response.append(
        [(arrivals[order][0] - responded[order]) * 1000 for order in mine]
    )
    latencies.created.append(len(responded))
    latencies.received.append(len(mine))
    published = await _times(stack.environment["ORDERS_DATABASE_URL"], OUTBOX_TIMES)
    delivered = await _times(stack.environment["WEBHOOKS_DATABASE_URL"], DELIVERY_TIMES)
    steps = {
        order: (arrivals[order][1], published[order][0], *delivered[order], arrivals[order][0])
        for order in mine
        if order in published and order in delivered
    }
    for index, stage in enumerate(STAGES):
        latencies.stages.setdefault(stage, []).append(
            [(times[index + 1] - times[index]) * 1000 for times in steps.values()]
        )


async def _times(database_url: str, query: str) -> dict[str, tuple[float, ...]]:
    """Each row's timestamps (epoch s) by its first column, the order id."""
    connection = await asyncpg.connect(database_url)
    try:
        rows = await connection.fetch(query)
    finally:
        await connection.close()
    return {row[0]: tuple(moment.timestamp() for moment in row[1:]) for row in rows}


def measure_latency(stack: Stack, duration_s: int, latencies: Latencies) -> None:
    asyncio.run(_measure_latency(stack, duration_s, latencies))


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile (``fraction`` 0.5: the median)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def latency_table(latencies: Latencies) -> list[str]:
    lines = [
        "| to | measured from | p50 ms | p99 ms | max ms | events received / orders created |",
        "|---|---|---|---|---|---|",
    ]
    for to, label, runs, received in (
        ("webhook", EVENT_TIME, latencies.from_event_time, latencies.received),
        ("webhook", RESPONSE, latencies.from_response, latencies.received),
        ("event stream", EVENT_TIME, latencies.stream_from_event_time, latencies.streamed),
        ("event stream", RESPONSE, latencies.stream_from_response, latencies.streamed),
    ):
        p50 = Spread.of([percentile(run, 0.5) for run in runs] or [NAN]).cell(1)
        p99 = Spread.of([percentile(run, 0.99) for run in runs] or [NAN]).cell(1)
        top = Spread.of([max(run, default=NAN) for run in runs] or [NAN]).cell(1)
        lines.append(
            f"| {to} | {label} | {p50} | {p99} | {top} "
            f"| {sum(received):,} / {sum(latencies.created):,} |"
        )
    return lines


def stages_table(latencies: Latencies) -> list[str]:
    lines = ["| stage | p50 ms | p99 ms |", "|---|---|---|"]
    for stage, label in STAGES.items():
        runs = latencies.stages.get(stage, [])
        p50 = Spread.of([percentile(run, 0.5) for run in runs] or [float("nan")]).cell(1)
        p99 = Spread.of([percentile(run, 0.99) for run in runs] or [float("nan")]).cell(1)
        lines.append(f"| {label} | {p50} | {p99} |")
    return lines


def section(samples: Samples, latencies: Latencies) -> Section:
    def throughput(peer: str) -> list[float]:
        pairs = zip(samples[(peer, CONNECTIONS)], samples[("off", CONNECTIONS)], strict=True)
        return [with_events.requests_per_s / off.requests_per_s for with_events, off in pairs]

    def server_core_cpu(peer: str) -> list[float]:
        """Off's CPU per order on the server core over the peer's: the throughput ratio
        the server core allows when it is the limit (NATS counts for on only)."""
        pairs = zip(samples[(peer, CONNECTIONS)], samples[("off", CONNECTIONS)], strict=True)
        return [
            sum(off.cpu_us.get(name, 0.0) for name in SERVER_CORE_PROCESSES["off"])
            / sum(with_events.cpu_us.get(name, 0.0) for name in SERVER_CORE_PROCESSES[peer])
            for with_events, off in pairs
        ]

    def orders_cpu(peer: str, process: str) -> list[float]:
        pairs = zip(samples[(peer, CONNECTIONS)], samples[("off", CONNECTIONS)], strict=True)
        return [
            with_events.cpu_us[process] / off.cpu_us["orders-off"]
            for with_events, off in pairs
            if with_events.cpu_us.get(process) and off.cpu_us.get("orders-off")
        ]

    all_latencies = [value for run in latencies.from_event_time for value in run]
    return Section(
        title="Order events: cost and latency to a webhook",
        intro=(
            "*Throughput*: `POST /orders` as in *Order creation through the gateway*, "
            "through three gateways "
            "in front of three orders-services, measured back to back in each run. Events "
            "on: the platform's orders-service, which writes each order's event to its "
            "outbox in the order's transaction and whose relay publishes it to the "
            "platform's nats-server. Events off: a second orders-service on the same "
            "database with `EVENTS_ENABLED=false` (no outbox row, no relay, no NATS "
            "connection; orders-service/tests/integration/test_events_switch.py). Events "
            "recorded, not relayed: a third on a database of its own whose `NATS_URL` "
            "names a port nothing listens on, so its rows are written and wait (its relay "
            "only retries the connection): on minus this is the relay's share. The webhooks "
            "dispatcher does not run for this part (its cost grows with the endpoints, not "
            "with the order path). wrk and the gateways on core 0; users, orders, books and "
            "nats-server on core 1. *Latency*: a platform with webhooks-service and its "
            "dispatcher (defaults: `WEBHOOK_POLL_INTERVAL_S=1`, `WEBHOOK_CONCURRENCY=8`); "
            "an admin registers through the gateway an endpoint for `orders.order.created` "
            "served by an aiohttp receiver in the benchmark process on loopback "
            f"(`WEBHOOK_ALLOW_PRIVATE=1`), and orders are created through the gateway at a "
            f"steady {RATE_PER_S:.0f} a second, one customer, for the run's duration "
            "(`python bench/run.py events` measures this section alone)."
        ),
        table=[
            *wrk_table(samples, PEERS),
            "",
            *latency_table(latencies),
            "",
            *stages_table(latencies),
        ],
        ratios=[
            Ratio(
                f"events on / off, order creation throughput, {CONNECTIONS} connections "
                f"(before: {BEFORE_RATIO})",
                throughput("on"),
                TARGET_RATIO,
            ),
            Ratio(
                f"commit → webhook p99 at {RATE_PER_S:.0f} orders/s, from the event's time "
                f"(before: p50 {BEFORE_WEBHOOK_MS[0]:.0f}, p99 {BEFORE_WEBHOOK_MS[1]:.0f} ms)",
                [percentile(run, 0.99) for run in latencies.from_event_time],
                TARGET_P99_MS,
                higher_is_better=False,
                unit="ms",
                digits=1,
            ),
            Ratio(
                f"commit → event stream p99 at {RATE_PER_S:.0f} orders/s, from the event's "
                "time (new)",
                [percentile(run, 0.99) for run in latencies.stream_from_event_time],
                TARGET_P99_MS,
                higher_is_better=False,
                unit="ms",
                digits=1,
            ),
            Ratio(
                "events on / off, throughput the server core's CPU per order allows",
                server_core_cpu("on"),
                None,
            ),
            Ratio(
                "events recorded, not relayed / off, order creation throughput",
                throughput("outbox"),
                None,
            ),
            Ratio(
                "events on / off, orders-service CPU per order",
                orders_cpu("on", "orders"),
                None,
                higher_is_better=False,
            ),
            Ratio(
                "events recorded, not relayed / off, orders-service CPU per order",
                orders_cpu("outbox", "orders-outbox"),
                None,
                higher_is_better=False,
            ),
        ],
        notes=[
            "On a busy shared machine the throughput ratio swings with whatever else runs "
            "during each peer's seconds; CPU per order is steadier. The ratio *the server "
            "core's CPU per order allows* is off's CPU per order on core 1 (orders-service "
            "and books-graphql; nats-server too for on) over on's: the throughput ratio to "
            "expect where core 1 is the limit.",
            "Latency is the time the receiver got the webhook's POST minus either the "
            "event's CloudEvents `time` or the time the client got its 201. `time` is "
            "taken when `Outbox.record` builds the event inside the order's transaction, "
            "after the order's insert and before the outbox insert and the commit: it "
            "precedes the commit by that remainder of the transaction, so latency from it "
            "is an upper bound of commit to webhook; the 201 follows the commit (and the "
            "way back through the gateway), so latency from it is a lower bound. Cells are "
            "median (min..max) over the runs of each run's nearest-rank percentile; "
            f"{len(all_latencies):,} events in all. Each run first sends one order all the "
            "way to the receiver, unmeasured: a dispatcher started moments before may still "
            "be waiting for the ORDERS stream to exist.",
            "The stages come from the services' own rows: the outbox's `published_at` "
            "(marked once JetStream acked the batch), the delivery's `created_at` and its "
            "first attempt's `attempted_at`. The relay wakes when a transaction that wrote "
            "an outbox row commits (PostgreSQL `NOTIFY`; its 1 s poll is a safety net); "
            "the dispatcher's delivery loop is woken by its intake as soon as it writes "
            "deliveries; its `WEBHOOK_POLL_INTERVAL_S` (1 s) only paces retries and other "
            "dispatchers' deliveries.",
            "The event stream: the same customer's `GET /api/events/stream?type="
            "orders.order.created` through the gateway, read by httpx-sse in the benchmark "
            "process, open for the whole run. Each event reaches it after the dispatcher "
            "logged it: webhooks-service's feed is woken by the log write's `NOTIFY`, reads "
            "the new events once and writes each to the streams that want it; the gateway "
            "forwards each chunk as it arrives.",
        ],
    )


def measure_all(wrk: Wrk, runs: int, duration_s: int, samples: Samples) -> Latencies:
    """``runs`` runs, each on two platforms of its own (one without webhooks, one with)."""
    latencies = Latencies()
    for _ in range(runs):
        with platform() as stack:
            measure_throughput(stack, wrk, samples)
        with platform(webhooks=True) as stack:
            measure_latency(stack, duration_s, latencies)
    return latencies


def main() -> None:
    options = cli_options(__doc__)
    wrk = Wrk(options.duration)
    samples: Samples = {}
    latencies = measure_all(wrk, options.runs, options.duration, samples)
    wrk.save("events")
    print(section(samples, latencies).markdown())


if __name__ == "__main__":
    main()
