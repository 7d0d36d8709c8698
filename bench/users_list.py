"""Users list on PostgreSQL: users-service vs raw asyncpg, at 10 k and at 1 M users.

    uv run python bench/users_list.py [--runs 3] [--duration 6]

Two databases are seeded with ``python -m users_service seed`` (COPY): 10 k and 1 M users.
Each run starts, on core 1, users-service and bench/raw_users.py (the same statements by
raw asyncpg in a minimal Sanic handler) against each database, checks that both answer
the same body, then loads ``GET /api/users?limit=20`` with an admin token (wrk on core 0),
plus a deep page (``offset=10000&sort=name``) at 1 M. Each pair also runs with access
logs on, at 32 connections (the targets'): users-service at LOG_LEVEL=INFO, raw asyncpg
with ``RAW_ACCESS_LOG=1``, both writing a JSON line per request to stdout, which the
harness sends to a file. Targets: service/raw ≥ 0.9, logs off and on; the service's cost
at 1 M ≤ 1.5 times its cost at 10 k. The plans of the page query are EXPLAINed.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import httpx
import profiles
from harness import SERVER_CORE, Process, Wrk, alternate, started
from profiles import Profile
from report import Memory, Ratio, Samples, Section, cli_options, wrk_table
from stack import (
    ADMIN_EMAIL,
    ADMIN_PASSWORD,
    PYTHON,
    base_environment,
    log_in,
    migrate,
    postgres_database,
)
from tortoise import Tortoise

from api_shared.statements import parameterized
from api_testkit.callers import bearer
from api_testkit.environment import write_signing_key
from api_testkit.ports import free_port
from api_testkit.readiness import wait_ready
from users_service.database import database_config
from users_service.settings import Settings
from users_service.users.repository import PUBLIC_FIELDS, page_query

SIZES = {"10k": 10_000, "1M": 1_000_000}
FIRST_PAGE = "/api/users?limit=20"
DEEP_PAGE = "/api/users?limit=20&offset=10000&sort=name"
CONNECTIONS = (32, 1)
LABELS = {
    "service-10k": "users-service, 10 k users",
    "raw-10k": "raw asyncpg, 10 k users",
    "service-1M": "users-service, 1 M users",
    "raw-1M": "raw asyncpg, 1 M users",
    "deep-1M": "users-service, 1 M users, `offset=10000&sort=name`",
    "service-10k-logs": "users-service, 10 k users, access logs on",
    "raw-10k-logs": "raw asyncpg, 10 k users, access logs on",
    "service-1M-logs": "users-service, 1 M users, access logs on",
    "raw-1M-logs": "raw asyncpg, 1 M users, access logs on",
}
LOGS_ON = "-logs"  # the suffix of a peer (and of its process) with access logs on
LOGGED_CONNECTIONS = (32,)  # the targets' connection count: what logs on are measured at
PROFILED = ("service-10k", "raw-10k")
EXPLAINED = {
    "default sort, offset 0": ("created_at", 0),
    "default sort, offset 10000": ("created_at", 10_000),
    "sort=name, offset 10000": ("name", 10_000),
    "sort=-createdAt, offset 10000": ("-created_at", 10_000),
}


@dataclass
class Seeded:
    """The two databases, how long seeding took, and the plans of the page query at 1 M."""

    urls: dict[str, str]
    seconds: dict[str, float] = field(default_factory=dict)
    plans: dict[str, list[str]] = field(default_factory=dict)
    profiles: dict[str, Profile] = field(default_factory=dict)  # of the first run


def seed(env: dict[str, str], users: int) -> float:
    """``python -m users_service seed`` with its progress bar on our terminal; seconds taken."""
    started_at = time.monotonic()
    subprocess.run(
        [PYTHON, "-m", "users_service", "seed", "--users", str(users), "--progress"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.monotonic() - started_at


async def explain(url: str) -> dict[str, list[str]]:
    """EXPLAIN ANALYZE of the exact SQL users-service runs for a page, per case."""
    await Tortoise.init(config=database_config(Settings(database_url=url)))
    try:
        statements = {}
        for case, (order, offset) in EXPLAINED.items():
            query = page_query(role=None, order_by=order, limit=20, offset=offset)
            statements[case] = parameterized(query.values(*PUBLIC_FIELDS))
    finally:
        await Tortoise.close_connections()
    connection = await asyncpg.connect(url)
    try:
        plans = {}
        for case, (sql, parameters) in statements.items():
            await connection.fetch(sql, *parameters)  # warm, as a page read before would be
            explained = f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {sql}"
            plans[case] = [row[0] for row in await connection.fetch(explained, *parameters)]
        return plans
    finally:
        await connection.close()


def check_same_body(service_url: str, raw_url: str, headers: dict[str, str]) -> None:
    """The raw handler is only a floor if it answers exactly what the service answers."""
    service, raw = (httpx.get(url + FIRST_PAGE, headers=headers, timeout=30) for url in
                    (service_url, raw_url))  # fmt: skip
    if service.status_code != 200 or service.json() != raw.json():
        raise SystemExit(f"raw_users.py and users-service disagree:\n{service.text}\n{raw.text}")


def prepare(folder: Path, stack: ExitStack) -> tuple[dict[str, str], Seeded]:
    env = base_environment(write_signing_key(folder / "signing-key.pem"))
    seeded = Seeded({name: stack.enter_context(postgres_database(f"users_{name}"))
                     for name in SIZES})  # fmt: skip
    for name, users in SIZES.items():
        database_env = dict(env, USERS_DATABASE_URL=seeded.urls[name])
        migrate("users_service", database_env)
        print(f"seeding {users} users ({name})", file=sys.stderr)
        seeded.seconds[name] = seed(database_env, users)
    seeded.plans = asyncio.run(explain(seeded.urls["1M"]))
    return env, seeded


def servers(env: dict[str, str], seeded: Seeded) -> Iterator[tuple[str, list[str], dict[str, str]]]:
    """(name, command, environment) of the eight processes of a run: a service and its raw
    peer per database, access logs off and on."""
    for size, url in seeded.urls.items():
        for logs, service_level, raw_access_log in (("", "WARNING", "0"), (LOGS_ON, "INFO", "1")):
            port, raw_port = free_port(), free_port()
            service_env = dict(
                env, USERS_DATABASE_URL=url, USERS_PORT=str(port), LOG_LEVEL=service_level
            )
            yield f"service-{size}{logs}", [PYTHON, "-m", "users_service", "serve"], service_env
            raw_env = dict(
                env,
                RAW_DATABASE_URL=url,
                RAW_PORT=str(raw_port),
                RAW_ACCESS_LOG=raw_access_log,
                JWKS_URL=f"http://127.0.0.1:{port}/.well-known/jwks.json",
            )
            raw = [PYTHON, str(Path(__file__).with_name("raw_users.py"))]
            yield f"raw-{size}{logs}", raw, raw_env


def _size(name: str) -> str:
    """The database a peer reads: ``10k`` or ``1M``."""
    return next(size for size in SIZES if f"-{size}" in name)


def measure_run(
    env: dict[str, str], seeded: Seeded, wrk: Wrk, samples: Samples, memory: Memory
) -> None:
    with ExitStack() as stack:
        urls: dict[str, str] = {}
        processes: dict[str, Process] = {}
        for name, command, process_env in servers(env, seeded):
            port = process_env.get("USERS_PORT") or process_env["RAW_PORT"]
            urls[name] = f"http://127.0.0.1:{port}"
            processes[name] = stack.enter_context(started(name, command, process_env, SERVER_CORE))
            wait_ready(urls[name] + ("/ready" if name.startswith("service") else "/health"),
                       processes[name].exited)  # fmt: skip
        memory.record_idle(_rss(processes))
        headers = {}
        for size in SIZES:
            token = log_in(urls[f"service-{size}"], ADMIN_EMAIL, ADMIN_PASSWORD)
            headers[size] = bearer(token)
            for logs in ("", LOGS_ON):
                check_same_body(
                    urls[f"service-{size}{logs}"], urls[f"raw-{size}{logs}"], headers[size]
                )
        urls["deep-1M"] = urls["service-1M"]
        targets = {
            name: (urls[name] + (DEEP_PAGE if name == "deep-1M" else FIRST_PAGE),
                   headers[_size(name)])
            for name in LABELS
        }  # fmt: skip
        for url, target_headers in targets.values():
            wrk.warm(url, headers=target_headers)
        for connections in CONNECTIONS:
            run = len(samples.get(("raw-10k", connections), []))
            for name in alternate(list(targets), run):
                if name.endswith(LOGS_ON) and connections not in LOGGED_CONNECTIONS:
                    continue
                url, target_headers = targets[name]
                server = processes["service-1M" if name == "deep-1M" else name]
                result = wrk(
                    LABELS[name],
                    url,
                    connections=connections,
                    headers=target_headers,
                    watch=[server],
                )
                samples.setdefault((name, connections), []).append(result)
        if not seeded.profiles:
            for name in PROFILED:
                url, target_headers = targets[name]
                found = profiles.record(wrk, [processes[name]], url, connections=CONNECTIONS[0],
                                        headers=target_headers)  # fmt: skip
                seeded.profiles[LABELS[name]] = found[name]
        memory.record_after(_rss(processes))


def _rss(processes: dict[str, Process]) -> dict[str, float]:
    return {f"{LABELS[name]} (users list)": p.rss_mib() for name, p in processes.items()}


def measure_all(wrk: Wrk, runs: int, samples: Samples, memory: Memory) -> Seeded:
    with tempfile.TemporaryDirectory(prefix="bench-users-") as folder, ExitStack() as stack:
        env, seeded = prepare(Path(folder), stack)
        for _ in range(runs):
            measure_run(env, seeded, wrk, samples, memory)
        return seeded


def _per_run(samples: Samples, a: str, b: str, connections: int, metric: str) -> list[float]:
    """a/b per run: throughput ratio (``rps``) or latency ratio (``p50``)."""
    pairs = zip(samples[(a, connections)], samples[(b, connections)], strict=True)
    if metric == "rps":
        return [x.requests_per_s / y.requests_per_s for x, y in pairs]
    return [x.p50_ms / y.p50_ms for x, y in pairs]


def section(samples: Samples, seeded: Seeded) -> Section:
    def cost(a: str, b: str, connections: int) -> list[float]:
        """How much more a request of ``a`` costs than one of ``b``."""
        if connections == 1:
            return _per_run(samples, a, b, 1, "p50")
        return _per_run(samples, b, a, connections, "rps")

    ratios = [
        Ratio("service / raw throughput, 10 k users, 32 connections",
              _per_run(samples, "service-10k", "raw-10k", 32, "rps"), 0.9),
        Ratio("service / raw throughput, 1 M users, 32 connections",
              _per_run(samples, "service-1M", "raw-1M", 32, "rps"), 0.9),
        Ratio("service / raw throughput, 10 k users, 32 connections, access logs on",
              _per_run(samples, "service-10k-logs", "raw-10k-logs", 32, "rps"), 0.9),
        Ratio("service / raw throughput, 1 M users, 32 connections, access logs on",
              _per_run(samples, "service-1M-logs", "raw-1M-logs", 32, "rps"), 0.9),
        Ratio("service cost 1 M / 10 k (1 / throughput), 32 connections",
              cost("service-1M", "service-10k", 32), 1.5, higher_is_better=False),
        Ratio("service cost 1 M / 10 k (p50 latency), 1 connection",
              cost("service-1M", "service-10k", 1), 1.5, higher_is_better=False),
        Ratio("raw cost 1 M / 10 k (1 / throughput), 32 connections",
              cost("raw-1M", "raw-10k", 32), None, higher_is_better=False),
        Ratio("service at 1 M: deep page / first page cost (1 / throughput), 32 connections",
              cost("deep-1M", "service-1M", 32), None, higher_is_better=False),
        Ratio("service at 1 M: deep page / first page cost (p50), 1 connection",
              cost("deep-1M", "service-1M", 1), None, higher_is_better=False),
    ]  # fmt: skip
    notes = [
        f"Seeding (`python -m users_service seed --users N`, COPY, then VACUUM ANALYZE): "
        f"10 k in {seeded.seconds['10k']:.1f} s, 1 M in {seeded.seconds['1M']:.1f} s.",
        "",
        *profiles.notes("Where the CPU goes", seeded.profiles),
        "Plans of the page query at 1 M users (EXPLAIN ANALYZE, the exact SQL users-service "
        "sends; `page.total` is one primary-key read of `user_counts`):",
        "",
    ]
    for case, plan in seeded.plans.items():
        notes += [f"- {case}:", "", "  ```", *(f"  {line}" for line in plan), "  ```"]
    return Section(
        title="Users list on PostgreSQL: service vs raw asyncpg, 10 k vs 1 M users",
        intro=(
            "`GET /api/users?limit=20` with an admin token and an exact `page.total`. "
            "*raw asyncpg* is bench/raw_users.py: one Sanic handler that checks the same "
            "token with the shared verifier, runs the same three statements on an asyncpg pool "
            "of the ORM's size and answers the same JSON (checked equal before each run). "
            "wrk on core 0, each server on core 1 (PostgreSQL unpinned). *Access logs on* "
            "(32 connections, the targets'): users-service at LOG_LEVEL=INFO and raw asyncpg "
            "with `RAW_ACCESS_LOG=1`, each writing one JSON line per request with the same "
            "fields to stdout, a file."
        ),
        table=wrk_table(samples, LABELS),
        ratios=ratios,
        notes=notes,
    )


def main() -> None:
    options = cli_options(__doc__)
    wrk = Wrk(options.duration)
    samples: Samples = {}
    memory = Memory()
    seeded = measure_all(wrk, options.runs, samples, memory)
    wrk.save("users-list")
    print(section(samples, seeded).markdown())
    print(memory.section().markdown())


if __name__ == "__main__":
    main()
