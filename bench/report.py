"""Figures to markdown: wrk tables, ratios against their targets, the machine and versions."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from harness import CORES, Spread, WrkResult

Samples = dict[tuple[str, int], list[WrkResult]]
"""wrk results by (peer, connections), one per run, in run order (so runs pair up)."""


@dataclass
class Ratio:
    """A figure derived per run from peers of the same run, and its target (None: context)."""

    name: str
    values: list[float]
    target: float | None
    higher_is_better: bool = True
    unit: str = ""  # ratios are plain numbers; latencies say "ms"
    digits: int = 2

    def met_in(self) -> int:
        """How many runs meet the target."""
        if self.target is None:
            return 0
        target = self.target
        return sum((v >= target) if self.higher_is_better else (v <= target) for v in self.values)

    def verdict(self) -> str:
        if self.target is None:
            return "reference"
        median = Spread.of(self.values).median
        ok = median >= self.target if self.higher_is_better else median <= self.target
        runs = f"{self.met_in()}/{len(self.values)} runs"
        return f"**met** ({runs})" if ok else f"**not met** ({runs})"

    def target_text(self) -> str:
        if self.target is None:
            return "—"
        sign = "≥" if self.higher_is_better else "≤"
        return f"{sign} {self.target:.1f}{self._suffix()}"

    def _suffix(self) -> str:
        return f" {self.unit}" if self.unit else ""

    def row(self) -> str:
        cell = Spread.of(self.values).cell(self.digits)
        return f"| {self.name} | {cell}{self._suffix()} | {self.target_text()} | {self.verdict()} |"


RATIO_HEADER = ["| ratio | median (min..max) | target | verdict |", "|---|---|---|---|"]


@dataclass
class Section:
    title: str
    intro: str
    table: list[str]
    ratios: list[Ratio] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        lines = [f"## {self.title}", "", self.intro, "", *self.table]
        if self.ratios:
            lines += ["", *RATIO_HEADER, *(ratio.row() for ratio in self.ratios)]
        if self.notes:
            lines += ["", *self.notes]
        return "\n".join(lines)


@dataclass
class Memory:
    """Resident memory (MiB) of each process: idle (ready, before any load), after its runs."""

    idle: dict[str, list[float]] = field(default_factory=dict)
    after: dict[str, list[float]] = field(default_factory=dict)

    def record_idle(self, readings: Mapping[str, float]) -> None:
        for name, mib in readings.items():
            self.idle.setdefault(name, []).append(mib)

    def record_after(self, readings: Mapping[str, float]) -> None:
        for name, mib in readings.items():
            self.after.setdefault(name, []).append(mib)

    def section(self) -> Section:
        lines = [
            "| process | idle MiB | after the runs MiB |",
            "|---|---|---|",
        ]
        for name, idle in self.idle.items():
            after = self.after.get(name, [float("nan")])
            lines.append(f"| {name} | {Spread.of(idle).cell()} | {Spread.of(after).cell()} |")
        return Section(
            title="Memory",
            intro=(
                "Resident set size (VmRSS, the process and its children) of every process the "
                "benchmark starts: once ready before any request, and after its section's "
                "load. Processes are started afresh for each run."
            ),
            table=lines,
        )


def wrk_table(samples: Samples, labels: Mapping[str, str]) -> list[str]:
    """One row per (connections, peer): requests/s, p50, p99, errors, CPU per request."""
    lines = [
        "| connections | peer | requests/s | p50 ms | p99 ms | errors | CPU µs/request |",
        "|---|---|---|---|---|---|---|",
    ]
    order = list(labels)
    for (name, connections), runs in sorted(
        samples.items(), key=lambda item: (-item[0][1], order.index(item[0][0]))
    ):
        lines.append(
            f"| {connections} | {labels[name]} "
            f"| {Spread.of([r.requests_per_s for r in runs]).cell()} "
            f"| {Spread.of([r.p50_ms for r in runs]).cell(2)} "
            f"| {Spread.of([r.p99_ms for r in runs]).cell(2)} "
            f"| {sum(r.errors for r in runs)} | {_cpu_cell(runs)} |"
        )
    return lines


def _cpu_cell(runs: Sequence[WrkResult]) -> str:
    processes = list(dict.fromkeys(name for run in runs for name in run.cpu_us))
    return "<br>".join(
        f"{name} {Spread.of([run.cpu_us[name] for run in runs if name in run.cpu_us]).cell()}"
        for name in processes
    )


def cli_options(description: str | None, argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="runs per figure (default 3)")
    parser.add_argument("--duration", type=int, default=6, help="seconds per wrk run (default 6)")
    return parser.parse_args(argv)


def _package(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def _command(*command: str) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=10)
    except OSError:
        return "not installed"
    output = (done.stdout or done.stderr).strip()  # wrk -v exits 1 after printing its version
    return output.splitlines()[0] if output else "?"


def _npm_version(root: Path, package: str) -> str:
    manifest = root / "node_modules" / package / "package.json"
    if not manifest.is_file():
        return "not installed"
    return str(json.loads(manifest.read_text())["version"])


def machine() -> list[str]:
    model = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    memory_kib = int(Path("/proc/meminfo").read_text().split()[1])
    return [
        f"{CORES} cores ({model}), {memory_kib / 1024 / 1024:.0f} GiB RAM, "
        f"{platform.system()} {platform.release()}",
    ]


def versions(*, nginx: str, apollo_root: Path, postgres: str) -> str:
    return ", ".join(
        [
            f"Python {sys.version.split()[0]}",
            f"Sanic {_package('sanic')}",
            f"Tortoise ORM {_package('tortoise-orm')}",
            f"asyncpg {_package('asyncpg')}",
            f"Tartiflette {_package('tartiflette')}",
            f"aiohttp {_package('aiohttp')}",
            f"nginx {nginx}",
            f"Node {_command('node', '--version').lstrip('v')}",
            f"Apollo Server {_npm_version(apollo_root, '@apollo/server')}",
            f"graphql-js {_npm_version(apollo_root, 'graphql')}",
            _command("wrk", "-v").split(" [")[0],
            f"PostgreSQL {postgres}",
        ]
    )


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f}"


def today() -> str:
    return time.strftime("%Y-%m-%d %H:%M %Z")
