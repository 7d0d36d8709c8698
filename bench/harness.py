"""Shared pieces of the benchmarks: processes pinned to cores, wrk runs, spreads and ratios.

Benchmarks measure; they never assert. Each figure is reported as min/median/max over
several runs, and peers are measured in the same run, one after the other, so that a ratio
of two figures of the same run cancels most of a noisy machine's drift.

Pinning (two cores): the load generator, and a proxy under test, on core 0
(``LOAD_CORE``); the servers behind on core 1 (``SERVER_CORE``). PostgreSQL is a shared
system service and is left where the kernel puts it, but where a section says otherwise
(``database_on_load_core``: the gateway's overhead).
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path

from api_testkit.paths import REPO
from api_testkit.processes import Service

RESULTS = REPO / "bench" / "results"
LOGS = RESULTS / "logs"
CACHE = REPO / ".cache"
CORES = os.cpu_count() or 1
LOAD_CORE = 0
SERVER_CORE = 1 if CORES > 1 else 0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def pinned(command: Sequence[str], core: int | None) -> list[str]:
    """Prefix ``command`` with taskset when it exists and the core does."""
    if core is None or core >= CORES or shutil.which("taskset") is None:
        return list(command)
    return ["taskset", "-c", str(core), *command]


def ensure_apt(package: str, binary: str) -> str:
    """The path of ``binary``, installing its Debian package first if needed."""
    path = shutil.which(binary) or _sbin(binary)
    for update in (False, True):
        if path is not None:
            return path
        if update:
            subprocess.run(["apt-get", "update", "-qq"], check=False)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", package],
            check=False,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
        path = shutil.which(binary) or _sbin(binary)
    raise SystemExit(f"{binary} is not available and {package} could not be installed")


def _sbin(binary: str) -> str | None:
    for folder in ("/usr/sbin", "/sbin"):
        if os.access(Path(folder, binary), os.X_OK):
            return str(Path(folder, binary))
    return None


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (e.g. nginx's master and worker)."""
    pids, index = [pid], 0
    while index < len(pids):
        for task in Path(f"/proc/{pids[index]}/task").glob("*/children"):
            with suppress(OSError):  # the process may exit while being read
                pids += [int(child) for child in task.read_text().split()]
        index += 1
    return pids


def rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants, in MiB (NaN once it has exited)."""
    total = 0
    for member in _tree(pid):
        try:
            status = Path(f"/proc/{member}/status").read_text()
        except OSError:
            continue
        if match := re.search(r"^VmRSS:\s+(\d+) kB", status, re.M):
            total += int(match.group(1))
    return total / 1024 if total else float("nan")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its descendants so far."""
    ticks = 0
    for member in _tree(pid):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return ticks / CLOCK_TICKS


@dataclass
class Process(Service):
    """A server the benchmarks started (api_testkit.processes), with what it costs."""

    def rss_mib(self) -> float:
        return rss_mib(self.pid) if self.pid is not None else float("nan")

    def cpu_s(self) -> float:
        return cpu_s(self.pid) if self.pid is not None else 0.0


@contextmanager
def started(
    name: str, command: Sequence[str], env: dict[str, str], core: int | None = None
) -> Iterator[Process]:
    """Run ``command`` (pinned to ``core``) in its own process group until the block ends."""
    LOGS.mkdir(parents=True, exist_ok=True)
    process = Process(name, pinned(command, core), env, LOGS / f"{name}.log")
    process.start()
    try:
        yield process
    finally:
        process.stop()


def _postgres_processes() -> list[int]:
    """The pids of the machine's PostgreSQL: its postmaster and every backend."""
    pids = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        with suppress(OSError):  # the process may exit while being read
            if comm.read_text().strip() == "postgres":
                pids.append(int(comm.parent.name))
    return pids


@contextmanager
def database_on_load_core() -> Iterator[bool]:
    """PostgreSQL's processes on the load core until the block ends; whether they could be.

    Unpinned, the kernel runs a backend on whichever core is idle when it wakes: while a
    proxy keeps the load core busy, that is the server core, and the database's work is
    then taken from the server under test, not from the proxy that displaced it. On the
    load core it competes with the load generator and the proxy, as a database on a
    machine of its own would not; the server core is the server's alone. Backends started
    meanwhile inherit the postmaster's core; every one gets its first cores back after.
    """
    first: dict[int, set[int]] = {}
    if not hasattr(os, "sched_setaffinity"):  # not Linux: nothing is pinned (see ``pinned``)
        yield False
        return
    for pid in _postgres_processes():
        with suppress(OSError):  # gone, or not ours to move (then it is left where it is)
            cores = os.sched_getaffinity(pid)
            os.sched_setaffinity(pid, {LOAD_CORE})
            first[pid] = cores
    try:
        yield bool(first)
    finally:
        every_core = set(range(CORES))
        for pid in _postgres_processes():
            with suppress(OSError):
                os.sched_setaffinity(pid, first.get(pid, every_core))


@dataclass(frozen=True)
class WrkResult:
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    raw: str
    requests: int = 0
    # CPU time each watched process spent per request during the run, in microseconds:
    # steadier than throughput on a shared machine, and it says which process pays.
    cpu_us: dict[str, float] = field(default_factory=dict)


_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def _ms(value: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", value).groups()  # type: ignore[union-attr]
    return float(number) * _UNITS_MS[unit]


def parse_wrk(output: str) -> WrkResult:
    # wrk always prints these lines with --latency; a missing one is a bug worth a traceback.
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"^\s+50%\s+(\S+)", output, re.M).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", output, re.M).group(1))  # type: ignore[union-attr]
    requests = int(re.search(r"(\d+) requests in", output).group(1))  # type: ignore[union-attr]
    errors = 0
    if match := re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output):
        errors += int(match.group(1))
    if match := re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    ):
        errors += sum(int(group) for group in match.groups())
    return WrkResult(rps, p50, p99, errors, output, requests)


@dataclass
class Wrk:
    """Runs wrk on the load core and keeps every raw output for ``bench/results/``."""

    duration_s: int
    outputs: list[str] = field(default_factory=list)

    def __call__(
        self,
        label: str,
        url: str,
        *,
        connections: int,
        headers: dict[str, str] | None = None,
        script: Path | None = None,
        duration_s: int | None = None,
        watch: Sequence[Process] = (),
    ) -> WrkResult:
        """One wrk run; ``watch``: processes whose CPU time per request is measured too."""
        seconds = duration_s or self.duration_s
        command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency"]
        for name, value in (headers or {}).items():
            command += ["-H", f"{name}: {value}"]
        if script is not None:
            command += ["-s", str(script)]
        command.append(url)
        before = {process.name: process.cpu_s() for process in watch}
        output = subprocess.run(
            pinned(command, LOAD_CORE), capture_output=True, text=True, check=True
        ).stdout
        result = parse_wrk(output)
        spent = {process.name: process.cpu_s() - before[process.name] for process in watch}
        cpu_us = {name: seconds * 1e6 / max(result.requests, 1) for name, seconds in spent.items()}
        cpu_line = ", ".join(f"{name} {us:.0f} us" for name, us in cpu_us.items())
        self.outputs.append(
            f"### {label} (c={connections}, {seconds} s)\n{output}"
            + (f"CPU per request: {cpu_line}\n" if cpu_line else "")
        )
        return replace(result, cpu_us=cpu_us)

    def warm(self, url: str, **options: object) -> None:
        """A short unrecorded run: connection pools, caches and prepared statements filled."""
        self("warm-up", url, connections=8, duration_s=2, **options)  # type: ignore[arg-type]
        self.outputs.pop()

    def save(self, name: str) -> Path:
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"{name}-wrk.txt"
        path.write_text("\n\n".join(self.outputs))
        return path


@dataclass(frozen=True)
class Spread:
    low: float
    median: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        return cls(min(values), statistics.median(values), max(values))

    def cell(self, digits: int = 0) -> str:
        return f"{self.median:.{digits}f} ({self.low:.{digits}f}..{self.high:.{digits}f})"


def alternate(names: Sequence[str], run: int) -> list[str]:
    """``names`` forwards on even runs, backwards on odd ones: whoever goes first (or
    second) on a drifting machine does not always pay for it."""
    return list(names) if run % 2 == 0 else list(reversed(names))
