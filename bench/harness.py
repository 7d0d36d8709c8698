"""Shared pieces of the benchmarks: processes pinned to cores, wrk runs, result tables.

Benchmarks measure; they never assert. Each figure is reported as min/median/max over
several runs, and peers are measured in the same run so ratios are meaningful on a noisy
machine.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
CORES = os.cpu_count() or 1


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def pinned(command: Sequence[str], core: int | None) -> list[str]:
    """Prefix ``command`` with taskset when it exists and the core does."""
    if core is None or core >= CORES or shutil.which("taskset") is None:
        return list(command)
    return ["taskset", "-c", str(core), *command]


def ensure_apt(package: str, binary: str) -> str:
    """The path of ``binary``, installing its Debian package first if needed."""
    path = shutil.which(binary)
    if path is None:
        subprocess.run(["apt-get", "install", "-y", "-qq", package], check=False)
        path = shutil.which(binary)
    if path is None:
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", package], check=True)
        path = shutil.which(binary)
    if path is None:
        raise SystemExit(f"{binary} is not available and {package} could not be installed")
    return path


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def rss_mib(self) -> float:
        """Resident memory of the process (and its children, e.g. a shell's exec'd child)."""
        try:
            for line in Path(f"/proc/{self.popen.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except FileNotFoundError:
            pass
        return float("nan")

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)


@contextmanager
def started(
    name: str, command: Sequence[str], env: dict[str, str], logs: Path, core: int | None = None
) -> Iterator[Process]:
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{name}.log"
    with log.open("ab") as out:
        popen = subprocess.Popen(
            pinned(command, core), cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    process = Process(name, popen, log)
    try:
        yield process
    finally:
        process.stop()


def wait_ready(url: str, process: Process, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            raise SystemExit(f"{process.name} exited:\n{process.log.read_text()[-3000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{process.name} not ready at {url}:\n{process.log.read_text()[-3000:]}")


@dataclass(frozen=True)
class WrkResult:
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    raw: str


_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def _ms(value: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", value).groups()  # type: ignore[union-attr]
    return float(number) * _UNITS_MS[unit]


def parse_wrk(output: str) -> WrkResult:
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"^\s+50%\s+(\S+)", output, re.M).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", output, re.M).group(1))  # type: ignore[union-attr]
    errors = 0
    if match := re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output):
        errors += int(match.group(1))
    if match := re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    ):
        errors += sum(int(group) for group in match.groups())
    return WrkResult(rps, p50, p99, errors, output)


def wrk(
    url: str,
    *,
    connections: int,
    duration_s: int,
    headers: dict[str, str] | None = None,
    script: Path | None = None,
    core: int | None = None,
) -> WrkResult:
    command = ["wrk", "-t1", f"-c{connections}", f"-d{duration_s}s", "--latency"]
    for name, value in (headers or {}).items():
        command += ["-H", f"{name}: {value}"]
    if script is not None:
        command += ["-s", str(script)]
    command.append(url)
    output = subprocess.run(
        pinned(command, core), capture_output=True, text=True, check=True
    ).stdout
    return parse_wrk(output)


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


def machine_line() -> str:
    model = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return f"{CORES} cores ({model}), Python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d')}"
