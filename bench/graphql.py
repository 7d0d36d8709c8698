"""books-graphql against Apollo Server 5 (getting-started books service), same query, same data.

    uv run python bench/graphql.py [--runs 3] [--duration 10]

Installs @apollo/server 5 and graphql into .cache/bench-apollo with npm (nothing is
committed), serves the same catalog from both (books-graphql's seed file), and loads
``POST / {"query": "{ books { title author } }"}`` with wrk. Each server gets core 1, wrk
core 0. books-graphql runs twice: as configured by default (successful responses replayed
for 1 s, see books_graphql/response_cache.py) and with that cache off, which measures
Tartiflette executing every request. Prints a markdown table; raw wrk output goes under
bench/results/.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from harness import (
    REPO,
    RESULTS,
    Process,
    Spread,
    WrkResult,
    ensure_apt,
    free_port,
    machine_line,
    started,
    wait_ready,
    wrk,
)

APOLLO_PACKAGES = ("@apollo/server@5", "graphql@16")
APOLLO_DIR = REPO / ".cache" / "bench-apollo"
SEED_FILE = REPO / "books-graphql" / "src" / "books_graphql" / "data" / "books.json"
QUERY_BODY = '{"query":"{ books { title author } }"}'
CONNECTIONS = (32, 1)
WRK_SCRIPT = f"""
wrk.method = "POST"
wrk.body = '{QUERY_BODY}'
wrk.headers["Content-Type"] = "application/json"
"""


def install_apollo() -> Path:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise SystemExit("node and npm are needed: apt-get install -y nodejs npm")
    APOLLO_DIR.mkdir(parents=True, exist_ok=True)
    if not (APOLLO_DIR / "node_modules" / "@apollo" / "server").is_dir():
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error",
             "--prefix", str(APOLLO_DIR), *APOLLO_PACKAGES],
            check=True,
        )  # fmt: skip
    # ESM resolves packages from the script's folder: the server lives beside node_modules.
    server = APOLLO_DIR / "apollo-books.mjs"
    shutil.copyfile(Path(__file__).parent / "apollo-books.mjs", server)
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10)
    args = parser.parse_args()
    ensure_apt("wrk", "wrk")
    apollo_server = install_apollo()

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        script = work / "query.lua"
        script.write_text(WRK_SCRIPT)
        ports = {"apollo": free_port(), "books": free_port(), "books-uncached": free_port()}
        base = dict(os.environ, LOG_LEVEL="WARNING", APP_ENV="development")
        database = os.environ.get("BENCH_BOOKS_DATABASE_URL", f"sqlite://{work / 'books.sqlite3'}")
        books_env = dict(base, BOOKS_DATABASE_URL=database, BOOKS_PORT=str(ports["books"]))
        uncached_env = dict(
            books_env, BOOKS_PORT=str(ports["books-uncached"]), BOOKS_RESPONSE_CACHE_TTL_S="0"
        )
        apollo_env = dict(
            base, NODE_ENV="production", PORT=str(ports["apollo"]), BOOKS_FILE=str(SEED_FILE)
        )
        python = sys.executable
        subprocess.run(
            [python, "-m", "books_graphql", "migrate"], env=books_env, check=True,
            capture_output=True,
        )  # fmt: skip
        logs = RESULTS / "logs"
        books_command = [python, "-m", "books_graphql", "serve"]
        results: dict[tuple[str, int], list[WrkResult]] = {}
        servers = (
            ("apollo", ["node", str(apollo_server)], apollo_env, "/"),
            ("books", books_command, books_env, "/ready"),
            ("books-uncached", books_command, uncached_env, "/ready"),
        )
        # One server at a time on core 1, so none competes with another for it.
        for _ in range(args.runs):
            for name, command, env, probe in servers:
                url = f"http://127.0.0.1:{ports[name]}"
                with started(name, command, env, logs, core=1) as process:
                    if name == "apollo":
                        _wait_apollo(url, process)
                    else:
                        wait_ready(url + probe, process)
                    wrk(url + "/", connections=8, duration_s=2, script=script, core=0)  # warm
                    for connections in CONNECTIONS:
                        results.setdefault((name, connections), []).append(
                            wrk(url + "/", connections=connections, duration_s=args.duration,
                                script=script, core=0)
                        )  # fmt: skip

    RESULTS.mkdir(parents=True, exist_ok=True)
    raw = "\n\n".join(
        f"### {name} c={c} run {i}\n{r.raw}"
        for (name, c), runs in results.items()
        for i, r in enumerate(runs, 1)
    )
    (RESULTS / "graphql-wrk.txt").write_text(raw)
    print(report(results))


def _wait_apollo(url: str, process: Process) -> None:
    """Apollo has no readiness route: wait until it answers the benchmark's query."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.popen.poll() is not None:
            raise SystemExit(f"Apollo Server exited:\n{process.log.read_text()[-3000:]}")
        try:
            headers = {"content-type": "application/json"}
            if httpx.post(url + "/", content=QUERY_BODY, headers=headers).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"Apollo Server did not start at {url}")


def report(results: dict[tuple[str, int], list[WrkResult]]) -> str:
    labels = {
        "apollo": "Apollo Server 5 (NODE_ENV=production)",
        "books": "books-graphql (defaults: 1 s response cache)",
        "books-uncached": "books-graphql, response cache off",
    }
    lines = [
        "## GraphQL: books-graphql vs Apollo Server",
        "",
        f"Machine: {machine_line()}. `POST /` `{{ books {{ title author }} }}`, "
        "24 books in both, wrk -t1 on core 0, the server alone on core 1.",
        "",
        "| connections | server | requests/s | p50 ms | p99 ms | errors |",
        "|---|---|---|---|---|---|",
    ]
    for (name, c), runs in sorted(results.items(), key=lambda item: (-item[0][1], item[0][0])):
        lines.append(
            f"| {c} | {labels[name]} | {Spread.of([r.requests_per_s for r in runs]).cell()} "
            f"| {Spread.of([r.p50_ms for r in runs]).cell(3)} "
            f"| {Spread.of([r.p99_ms for r in runs]).cell(3)} | {sum(r.errors for r in runs)} |"
        )
    apollo = [r.requests_per_s for r in results[("apollo", 32)]]
    lines.append("")
    for name in ("books", "books-uncached"):
        ours = [r.requests_per_s for r in results[(name, 32)]]
        ratios = [o / a for o, a in zip(ours, apollo, strict=True)]
        lines.append(
            f"- {labels[name]} / Apollo at 32 connections: {Spread.of(ratios).cell(2)} "
            "(target ≥ 1.0)"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
