"""Where a server's CPU goes under load: py-spy samples, summed by what the code does.

``record`` runs one extra wrk run (not one of the measured ones) while py-spy samples the
server, and weighs each category's share of the samples by the run's CPU µs per request:
"Sanic's server 140 µs, the ORM's query building 356 µs, ...". A sample counts for the
first category that matches a frame, from the innermost frame out (the code on the CPU,
or the nearest code of ours above a C call). Idle worker threads are left out.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from harness import Process, Wrk

PY_SPY = Path(sys.executable).with_name("py-spy")
SAMPLES_PER_S = 250
CATEGORIES: list[tuple[str, re.Pattern[str]]] = [
    (name, re.compile(pattern))
    for name, pattern in [
        ("event loop (uvloop), between callbacks",
         r"^(_run_server_forever|run_forever|_run_once) "),
        ("pydantic models", r"pydantic|model_validate|model_dump|WireModel\.wire"),
        ("ORM: query building", r"pypika|_make_query|get_parameterized_sql|queryset\.py"),
        ("ORM: model instances", r"_init_from_db|models\.py|to_python_value"),
        ("ORM: execution layers", r"tortoise/|api_shared/statements"),
        ("asyncpg: protocol and socket I/O", r"asyncpg/connection|asyncpg/protocol"),
        ("asyncpg: connection pool", r"asyncpg/pool"),
        ("HTTP client to upstreams (aiohttp)", r"aiohttp/|yarl/|multidict/"),
        ("HTTP client to upstreams (the gateway's own)",
         r"gateway/upstream/(pool|connection)\.py|httptools"),
        ("GraphQL execution", r"tartiflette|books_graphql/"),
        ("logging", r"logging/|api_shared/logging"),
        ("middleware: request id, metrics, CORS, tracing",
         r"request_id|prometheus|api_shared/metrics|gateway/metrics|cors\.py|tracing|_middleware"),
        ("handler: routes, services, auth, paging",
         r"_service/|gateway/|raw_users|api_shared/(auth|paging|representation|validation|errors)"),
        ("Sanic: HTTP server, request and response",
         r"sanic/|http1|handle_request|connection_task"),
    ]
]  # fmt: skip
OTHER = "other (stdlib, asyncio)"


@dataclass(frozen=True)
class Profile:
    """CPU µs per request of one process, by category."""

    cpu_us: float
    shares: dict[str, float]  # category → share of the samples
    unreadable: int = 0  # py-spy's lines that were not ``stack count`` (left out)

    def us(self, category: str) -> float:
        return self.shares.get(category, 0.0) * self.cpu_us


def record(
    wrk: Wrk,
    processes: list[Process],
    url: str,
    *,
    connections: int,
    headers: dict[str, str] | None = None,
    script: Path | None = None,
) -> dict[str, Profile]:
    """One unrecorded wrk run with py-spy sampling each of ``processes``; by process name."""
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as folder:
        samplers = {}
        for process in processes:
            assert process.pid is not None, f"{process.name} is not running"
            stacks = Path(folder, f"{process.name}.txt")
            samplers[process.name] = stacks, subprocess.Popen(
                [str(PY_SPY), "record", "--pid", str(process.pid), "--rate", str(SAMPLES_PER_S),
                 "--format", "raw", "--output", str(stacks), "--nonblocking"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
        try:
            result = wrk("profile", url, connections=connections, headers=headers,
                         script=script, watch=processes)  # fmt: skip
        finally:
            for _, sampler in samplers.values():
                sampler.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
            for _, sampler in samplers.values():
                sampler.wait(timeout=30)
        wrk.outputs.pop()  # not one of the measured runs
        profiles = {}
        for name, (stacks, _) in samplers.items():
            # py-spy may write a garbled line (a frame read mid-change): bytes kept as they are
            collapsed = stacks.read_text(errors="replace")
            profiles[name] = Profile(result.cpu_us[name], *shares(collapsed))
        return profiles


def shares(collapsed: str) -> tuple[dict[str, float], int]:
    """Each category's share of py-spy's collapsed stacks (``frame;frame;... count``), and
    how many lines were not of that form: a sampler reading a stack while it changes can
    write a garbled line, which is counted and left out rather than ending the benchmark."""
    counts: Counter[str] = Counter()
    unreadable = 0
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdecimal():
            unreadable += 1
            continue
        frames = stack.split(";")
        if any(frame.startswith("_worker ") for frame in frames):
            continue  # an idle thread of a pool (Argon2's, the resolver's)
        counts[_category(frames)] += int(count)
    total = sum(counts.values()) or 1
    return {name: count / total for name, count in counts.items()}, unreadable


def _category(frames: list[str]) -> str:
    for frame in reversed(frames):
        for name, pattern in CATEGORIES:
            if pattern.search(frame):
                return name
    return OTHER


def table(profiles: dict[str, Profile]) -> list[str]:
    """Categories as rows, one column of CPU µs per request for each profiled peer."""
    names = list(profiles)
    order = [name for name, _ in CATEGORIES] + [OTHER]
    used = [c for c in order if any(p.shares.get(c, 0) >= 0.005 for p in profiles.values())]
    lines = [
        "| where the CPU goes (py-spy) | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for category in used:
        cells = [f"{profiles[name].us(category):.0f}" for name in names]
        lines.append(f"| {category} | " + " | ".join(cells) + " |")
    totals = [f"**{profiles[name].cpu_us:.0f}**" for name in names]
    lines.append("| **CPU µs per request** | " + " | ".join(totals) + " |")
    return lines


def notes(subject: str, where: dict[str, Profile] | None) -> list[str]:
    """A section's notes for its profiles: one sentence, then the table (none: nothing)."""
    if not where:
        return []
    unreadable = sum(profile.unreadable for profile in where.values())
    left_out = f" ({unreadable} unreadable sample lines left out)" if unreadable else ""
    return [
        f"{subject} by what it is spent on, in µs per request: py-spy sampling one more wrk "
        f"run of each peer, after the measured ones (bench/profiles.py){left_out}.",
        "",
        *table(where),
        "",
    ]
