"""``make bench``: every benchmark with its peers, side by side; writes docs/benchmarks.md.

    uv run python bench/run.py [--runs 3] [--duration 6]
    uv run python bench/run.py gateway [--runs 3] [--duration 6]   # section 1 only
    uv run python bench/run.py graphql [--runs 3] [--duration 6]   # section 2 only
    uv run python bench/run.py users [--runs 3] [--duration 6]     # section 3 only
    uv run python bench/run.py tracing [--runs 3] [--duration 6]   # section 5 only
    uv run python bench/run.py events [--runs 3] [--duration 6]    # section 6 only
    uv run python bench/run.py http [--runs 3] [--duration 6]      # section 7 only

``graphql`` measures only books-graphql against Apollo Server and replaces that section (and
its rows of the targets table) in the existing docs/benchmarks.md; ``gateway``, ``users``,
``tracing``, ``events`` and ``http`` likewise the gateway-overhead, users-list, tracing-cost,
order-events and HTTP-client sections.

1. Gateway overhead: direct vs gateway vs nginx (bench/gateway.py).
2. GraphQL: books-graphql vs Apollo Server 5 (bench/graphql.py).
3. Users list on PostgreSQL: service vs raw asyncpg, 10 k vs 1 M users (bench/users_list.py).
4. Order creation through the gateway (bench/orders.py).
5. Tracing cost at the gateway: off, 1 % and 100 % sampled (bench/tracing_cost.py).
6. Order events: creation with events on vs off, and commit-to-webhook latency
   (bench/order_events.py).
7. HTTP client for service-to-service calls: aiohttp vs httpx, the caller's CPU per request
   (bench/http_clients.py).
8. Memory of every process, idle and after its runs.

Peers are installed into caches on first use (wrk and nginx with apt, Apollo with npm into
.cache/); every database is created on the local PostgreSQL (``BENCH_POSTGRES_URL``, default
postgres://postgres@127.0.0.1:5432/postgres) and dropped afterwards. Raw
wrk output goes to bench/results/ (git-ignored). Figures are min/median/max over the runs;
ratios are computed per run from peers measured back to back, then summarised.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import asyncpg
import graphql
import http_clients
import order_events
import orders
import tracing_cost
import users_list
from harness import CORES, LOGS, REPO, Wrk, ensure_apt
from nginx import install_nginx, nginx_version
from profiles import Profile
from report import (
    RATIO_HEADER,
    Memory,
    Samples,
    Section,
    cli_options,
    load_average,
    machine,
    today,
    versions,
)
from stack import POSTGRES_URL, Stack, platform

import gateway
from api_testkit.tracing import OtlpReceiver

OUTPUT = REPO / "docs" / "benchmarks.md"
BEFORE_AFTER = REPO / "bench" / "before_after.md"
UNDER_LOAD = (
    "**Measured under load**: the machine was busier than its cores before this run, so "
    "these figures show that the scenario runs, not what it costs; re-measure on a "
    "quiet machine."
)


def say(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


async def _postgres_version() -> str:
    connection = await asyncpg.connect(POSTGRES_URL)
    try:
        return str(await connection.fetchval("SHOW server_version")).split()[0]
    finally:
        await connection.close()


def main() -> None:
    if sys.argv[1:2] and sys.argv[1] in ALONE:
        section_only(sys.argv[1], sys.argv[2:])
        return
    options = cli_options(__doc__)
    began, load_before = time.monotonic(), load_average()
    shutil.rmtree(LOGS, ignore_errors=True)  # this run's server logs only
    ensure_apt("wrk", "wrk")
    nginx = install_nginx()
    apollo = graphql.install_apollo()
    memory = Memory()

    gateway_samples: Samples = {}
    database_pinned = True  # PostgreSQL on the load core in every gateway run
    order_samples: Samples = {}
    order_profiles: dict[str, Profile] = {}
    gateway_profiles: dict[str, Profile] = {}
    tracing_samples: Samples = {}
    platform_wrk, order_wrk = Wrk(options.duration), Wrk(options.duration)
    tracing_wrk = Wrk(options.duration)
    with OtlpReceiver().running() as receiver:
        for run in range(1, options.runs + 1):
            say(f"gateway overhead, order creation and tracing cost, run {run}/{options.runs}")
            with platform(nginx=nginx) as stack:
                memory.record_idle(platform_memory(stack))
                database_pinned &= gateway.measure(
                    stack, platform_wrk, gateway_samples, gateway_profiles
                )
                orders.measure(stack, order_wrk, order_samples, order_profiles)
                memory.record_after(platform_memory(stack))
                tracing_cost.measure(stack, tracing_wrk, tracing_samples, receiver)
        spans_received = len(receiver.received())
    platform_wrk.save("gateway")
    order_wrk.save("orders")
    tracing_wrk.save("tracing")

    say("GraphQL: books-graphql vs Apollo Server")
    graphql_wrk = Wrk(options.duration)
    graphql_samples: Samples = {}
    graphql.measure_all(apollo, graphql_wrk, options.runs, graphql_samples, memory)
    graphql_wrk.save("graphql")

    say("users list: seeding 10 k and 1 M users, then service vs raw asyncpg")
    users_wrk = Wrk(options.duration)
    users_samples: Samples = {}
    seeded = users_list.measure_all(users_wrk, options.runs, users_samples, memory)
    users_wrk.save("users-list")

    say("order events: creation with events on vs off, commit-to-webhook latency")
    events_wrk = Wrk(options.duration)
    events_samples: Samples = {}
    latencies = order_events.measure_all(events_wrk, options.runs, options.duration, events_samples)
    events_wrk.save("events")

    say("HTTP client for service-to-service calls: aiohttp vs httpx")
    http_samples: Samples = {}
    http_clients.measure_all(options.runs, options.duration, http_samples)

    sections = [
        gateway.section(gateway_samples, gateway_profiles, database_pinned=database_pinned),
        graphql.section(graphql_samples),
        users_list.section(users_samples, seeded),
        orders.section(order_samples, order_profiles),
        tracing_cost.section(tracing_samples, spans_received),
        order_events.section(events_samples, latencies),
        http_clients.section(http_samples),
        memory.section(),
    ]
    elapsed = time.monotonic() - began
    header = document_header(
        options.runs,
        options.duration,
        elapsed,
        load_before,
        versions(
            nginx=nginx_version(nginx),
            apollo_root=graphql.APOLLO_DIR,
            postgres=asyncio.run(_postgres_version()),
        ),
        sections,
    )
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    kept = BEFORE_AFTER.read_text().strip()  # measured once, by hand: see the file
    OUTPUT.write_text("\n\n".join([header, *(s.markdown() for s in sections), kept]) + "\n")
    say(f"wrote {OUTPUT.relative_to(REPO)} in {elapsed / 60:.1f} min")


def platform_memory(stack: Stack) -> dict[str, float]:
    """Each platform process's resident MiB, and the platform's own processes together."""
    readings = {f"{name} (platform)": mib for name, mib in stack.rss_mib().items()}
    ours = sum(mib for name, mib in stack.rss_mib().items() if name != "nginx")
    return {**readings, "the platform's processes together (not nginx)": ours}


def measure_gateway(runs: int, duration_s: int) -> Section:
    wrk, samples, nginx = Wrk(duration_s), {}, install_nginx()
    where: dict[str, Profile] = {}
    database_pinned = True
    for _ in range(runs):
        with platform(nginx=nginx) as stack:
            database_pinned &= gateway.measure(stack, wrk, samples, where)
    wrk.save("gateway")
    return gateway.section(samples, where, database_pinned=database_pinned)


def measure_graphql(runs: int, duration_s: int) -> Section:
    wrk, samples = Wrk(duration_s), {}
    graphql.measure_all(graphql.install_apollo(), wrk, runs, samples, Memory())
    wrk.save("graphql")
    return graphql.section(samples)


def measure_users(runs: int, duration_s: int) -> Section:
    wrk, samples = Wrk(duration_s), {}
    seeded = users_list.measure_all(wrk, runs, samples, Memory())
    wrk.save("users-list")
    return users_list.section(samples, seeded)


def measure_tracing(runs: int, duration_s: int) -> Section:
    wrk, samples = Wrk(duration_s), {}
    spans_received = tracing_cost.measure_all(wrk, runs, samples)
    wrk.save("tracing")
    return tracing_cost.section(samples, spans_received)


def measure_events(runs: int, duration_s: int) -> Section:
    wrk, samples = Wrk(duration_s), {}
    latencies = order_events.measure_all(wrk, runs, duration_s, samples)
    wrk.save("events")
    return order_events.section(samples, latencies)


def measure_http(runs: int, duration_s: int) -> Section:
    samples: Samples = {}
    http_clients.measure_all(runs, duration_s, samples)
    return http_clients.section(samples)


@dataclass(frozen=True)
class Alone:
    """A section measured by itself: what it says, how, its rows of the targets table."""

    what: str
    measure: Callable[[int, int], Section]
    target_prefixes: tuple[str, ...]
    wrk: bool = True  # whether it loads with wrk (the HTTP clients are their own load)


ALONE = {
    "gateway": Alone("gateway overhead: direct vs gateway vs nginx, access logs off and on",
                     measure_gateway, ("| gateway", "| nginx")),
    "graphql": Alone("GraphQL: books-graphql vs Apollo Server", measure_graphql,
                     ("| books-graphql",)),
    "users": Alone("users list: seeding 10 k and 1 M users, then service vs raw asyncpg",
                   measure_users, ("| service", "| raw")),
    "tracing": Alone("tracing cost at the gateway: off, 1 % and 100 % sampled",
                     measure_tracing, ("| tracing",)),
    "events": Alone("order events: creation with events on vs off, commit-to-webhook latency",
                    measure_events, ("| events",)),
    "http": Alone("HTTP client for service-to-service calls: aiohttp vs httpx",
                  measure_http, ("| httpx",), wrk=False),
}  # fmt: skip


def section_only(name: str, argv: list[str]) -> None:
    """Measure one section alone and put it in place in docs/benchmarks.md."""
    alone = ALONE[name]
    options = cli_options(__doc__, argv)
    began, load_before = time.monotonic(), load_average()
    busy_before = os.getloadavg()[0] > CORES  # the bench's own load comes after: not counted
    if alone.wrk:
        ensure_apt("wrk", "wrk")
    say(alone.what)
    section = alone.measure(options.runs, options.duration)
    elapsed = time.monotonic() - began
    section.notes.append(
        f"Measured alone (`python bench/run.py {name}`) on {today()}: {options.runs} runs of "
        f"{options.duration} s, {elapsed / 60:.1f} min; load average before {load_before}, "
        f"after {load_average()}."
    )
    if busy_before:
        section.notes.append(UNDER_LOAD)
    OUTPUT.write_text(replace_section(OUTPUT.read_text(), section, alone.target_prefixes))
    say(f"updated the {section.title} section of {OUTPUT.relative_to(REPO)}")


def replace_section(document: str, section: Section, target_prefixes: tuple[str, ...]) -> str:
    """``document`` with ``section`` (same title) and its rows of the targets table replaced.

    A section the document does not have yet goes before the memory section. The targets
    table's rows starting with one of ``target_prefixes`` are the section's, replaced by
    its own (in the table's place for them: where the first of them was).
    """
    heading = f"## {section.title}"
    start = document.find(heading)
    if start < 0:
        start = document.index("## Memory")
        end = start - 1  # the line break before it: the sections stay a blank line apart
    else:
        end = document.find("\n## ", start + len(heading))
    document = document[:start] + section.markdown() + "\n" + ("" if end < 0 else document[end:])
    lines = document.split("\n")
    first = lines.index("## Targets") + 2  # the heading, a blank line, then the table
    last = first
    while last < len(lines) and lines[last].startswith("|"):
        last += 1
    rows = lines[first:last]
    own = [i for i, line in enumerate(rows) if line.startswith(target_prefixes)]
    at = own[0] if own else len(rows)
    kept = [line for i, line in enumerate(rows) if i not in own]
    new_rows = [ratio.row() for ratio in section.ratios if ratio.target is not None]
    rows = [*kept[:at], *new_rows, *kept[at:]]
    return "\n".join([*lines[:first], *rows, *lines[last:]])


def document_header(
    runs: int,
    duration_s: int,
    elapsed_s: float,
    load_before: str,
    versions_line: str,
    sections: list[Section],
) -> str:
    targets = [ratio.row() for s in sections for ratio in s.ratios if ratio.target is not None]
    return "\n".join(
        [
            "# Benchmarks",
            "",
            "Generated by `make bench` (bench/run.py); do not edit by hand. Raw wrk output: "
            "bench/results/ (git-ignored).",
            "",
            f"- Date: {today()}",
            f"- Machine: {machine()[0]}",
            f"- Versions: {versions_line}",
            f"- Load average (1/5/15 min) before: {load_before}, after: {load_average()} "
            "(other work on the machine shows here; the ratios pair peers of the same run)",
            f"- Method: {runs} runs per figure, each wrk run {duration_s} s (`wrk -t1`, after "
            "a 2 s warm-up per process); cells are median (min..max) over the runs; a ratio "
            "is computed within each run, from peers measured back to back, then summarised. "
            "Pinning: wrk and any proxy under test on core 0, servers on core 1. "
            "*CPU µs/request*: user + system CPU time of each named process during the wrk "
            "run divided by the requests served (steadier than throughput on a shared "
            "machine, and it names the process that pays).",
            f"- Databases: fresh `bench_*` databases on {POSTGRES_URL.rsplit('@', 1)[-1]} "
            "(`BENCH_POSTGRES_URL`), dropped afterwards; peers installed on first use into "
            "caches (wrk and nginx with apt, Apollo Server with npm into .cache/).",
            f"- Wall time of this `make bench`: {elapsed_s / 60:.1f} min",
            "",
            "## Targets",
            "",
            *RATIO_HEADER,
            *targets,
        ]
    )


if __name__ == "__main__":
    main()
