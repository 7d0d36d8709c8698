"""books-graphql against Apollo Server 5 (getting-started books service), same query, same data.

    uv run python bench/graphql.py [--runs 3] [--duration 6]

Installs @apollo/server 5 and graphql into .cache/bench-apollo with npm (nothing is
committed), serves the same catalog from both (books-graphql's seed file), and loads
``POST / {"query": "{ books { title author } }"}`` with wrk. Each server gets core 1, wrk
core 0, one server at a time. books-graphql runs twice: as configured by default
(successful responses replayed for 1 s, see books_graphql/response_cache.py) and with that
cache off, which measures Tartiflette executing every request. Target: books-graphql /
Apollo ≥ 1.0 at 32 connections.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
from harness import CACHE, SERVER_CORE, Process, Wrk, alternate, free_port, started, wait_ready
from report import Memory, Ratio, Samples, Section, cli_options, wrk_table
from stack import PYTHON, migrate, postgres_database

APOLLO_PACKAGES = ("@apollo/server@5", "graphql@16")
APOLLO_DIR = CACHE / "bench-apollo"
SEED_FILE = Path(__file__).resolve().parents[1] / "books-graphql/src/books_graphql/data/books.json"
QUERY_BODY = '{"query":"{ books { title author } }"}'
CONNECTIONS = (32, 1)
WRK_SCRIPT = f"""
wrk.method = "POST"
wrk.body = '{QUERY_BODY}'
wrk.headers["Content-Type"] = "application/json"
"""
LABELS = {
    "apollo": "Apollo Server 5 (NODE_ENV=production)",
    "books": "books-graphql (defaults: 1 s response cache)",
    "books-uncached": "books-graphql, response cache off",
}


def install_apollo() -> Path:
    """The Apollo server script, beside its node_modules in the cache (npm on first use)."""
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


def measure_all(apollo_server: Path, wrk: Wrk, runs: int, samples: Samples, memory: Memory) -> None:
    """Every run: each server started alone on the server core, warmed, then measured."""
    with tempfile.TemporaryDirectory() as folder, postgres_database("books") as database:
        script = Path(folder) / "query.lua"
        script.write_text(WRK_SCRIPT)
        ports = {name: free_port() for name in LABELS}
        base = dict(os.environ, LOG_LEVEL="WARNING", APP_ENV="development")
        books_env = dict(base, BOOKS_DATABASE_URL=database, BOOKS_PORT=str(ports["books"]))
        envs = {
            "apollo": dict(
                base, NODE_ENV="production", PORT=str(ports["apollo"]), BOOKS_FILE=str(SEED_FILE)
            ),
            "books": books_env,
            "books-uncached": dict(
                books_env, BOOKS_PORT=str(ports["books-uncached"]), BOOKS_RESPONSE_CACHE_TTL_S="0"
            ),
        }
        migrate("books_graphql", books_env)
        commands = {
            "apollo": ["node", str(apollo_server)],
            "books": [PYTHON, "-m", "books_graphql", "serve"],
            "books-uncached": [PYTHON, "-m", "books_graphql", "serve"],
        }
        for run in range(runs):
            for name in alternate(list(LABELS), run):
                url = f"http://127.0.0.1:{ports[name]}"
                with started(name, commands[name], envs[name], SERVER_CORE) as process:
                    if name == "apollo":
                        _wait_apollo(url, process)
                    else:
                        wait_ready(url + "/ready", process)
                    memory.record_idle({LABELS[name]: process.rss_mib()})
                    wrk.warm(url + "/", script=script)
                    for connections in CONNECTIONS:
                        result = wrk(
                            LABELS[name],
                            url + "/",
                            connections=connections,
                            script=script,
                            watch=[process],
                        )
                        samples.setdefault((name, connections), []).append(result)
                    memory.record_after({LABELS[name]: process.rss_mib()})


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


def section(samples: Samples) -> Section:
    apollo = [r.requests_per_s for r in samples[("apollo", 32)]]

    def ratio(name: str) -> list[float]:
        ours = [r.requests_per_s for r in samples[(name, 32)]]
        return [o / a for o, a in zip(ours, apollo, strict=True)]

    return Section(
        title="GraphQL: books-graphql vs Apollo Server 5",
        intro=(
            "`POST /` `{ books { title author } }`, the same 24 books in both (books-graphql "
            "reads them from PostgreSQL, Apollo from the same JSON file in memory). wrk on "
            "core 0, one server at a time on core 1."
        ),
        table=wrk_table(samples, LABELS),
        ratios=[
            Ratio("books-graphql (defaults) / Apollo, 32 connections", ratio("books"), 1.0),
            Ratio(
                "books-graphql, response cache off / Apollo, 32 connections",
                ratio("books-uncached"),
                None,
            ),
        ],
        notes=[
            "books-graphql's default configuration replays a successful answer for up to "
            "1 s per replica (`BOOKS_RESPONSE_CACHE_TTL_S`, books_graphql/response_cache.py); "
            "Apollo Server runs here without a cache. The second ratio is Tartiflette "
            "executing every request."
        ],
    )


def main() -> None:
    options = cli_options(__doc__)
    wrk = Wrk(options.duration)
    samples: Samples = {}
    memory = Memory()
    measure_all(install_apollo(), wrk, options.runs, samples, memory)
    wrk.save("graphql")
    print(section(samples).markdown())
    print(memory.section().markdown())


if __name__ == "__main__":
    main()
