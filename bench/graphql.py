"""books-graphql against Apollo Server 5 (getting-started books service), same query, same data.

    uv run python bench/graphql.py [--runs 3] [--duration 6]
    uv run python bench/run.py graphql      # the same, written into docs/benchmarks.md

Installs @apollo/server 5, its response-cache plugin and graphql into .cache/bench-apollo
with npm (nothing is committed). For each catalog size (24 books, the seed file; 1,000;
10,000) it writes one catalog file, imports it into a fresh PostgreSQL database with
``python -m books_graphql import`` and hands the same file to Apollo, checks that both
answer ``{ books { title author } }`` with the same bytes, then loads ``POST /`` with wrk,
8 connections. Four peers, one at a time on core 1 (wrk on core 0):

- Apollo Server 5 without a cache, and with @apollo/server-plugin-response-cache and a
  60 s cache hint on ``Query.books``;
- books-graphql with its response cache off (``BOOKS_RESPONSE_CACHE_TTL_S=0``: every
  request executes its plan over the in-memory catalog), and with its defaults (answers
  replayed until the catalog version changes).

Targets: books-graphql / Apollo ≥ 1.0 at every size, caches off on both sides, and on.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import httpx
import orjson
from harness import CACHE, SERVER_CORE, Process, Spread, Wrk, alternate, started
from report import Memory, Ratio, Samples, Section, cli_options, wrk_table
from stack import PYTHON, migrate, postgres_database

from api_testkit.ports import free_port
from api_testkit.readiness import wait_ready

APOLLO_PACKAGES = ("@apollo/server@5", "@apollo/server-plugin-response-cache@5", "graphql@16")
APOLLO_DIR = CACHE / "bench-apollo"
SEED_FILE = Path(__file__).resolve().parents[1] / "books-graphql/src/books_graphql/data/books.json"
QUERY = {"query": "{ books { title author } }"}
QUERY_BODY = orjson.dumps(QUERY).decode()
SIZES = (24, 1_000, 10_000)
CONNECTIONS = 8
WRK_SCRIPT = f"""
wrk.method = "POST"
wrk.body = '{QUERY_BODY}'
wrk.headers["Content-Type"] = "application/json"
"""
PEERS = {
    "apollo": "Apollo Server 5, no cache",
    "apollo-cached": "Apollo Server 5 + response-cache plugin",
    "books-uncached": "books-graphql, response cache off",
    "books": "books-graphql, defaults (response cache on)",
}
GENERATED_IDS = uuid.UUID("8d1e7c1a-5b7f-4c36-9b8e-2f7c2d0e6a51")


def install_apollo() -> Path:
    """The Apollo server script, beside its node_modules in the cache (npm on first use)."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise SystemExit("node and npm are needed: apt-get install -y nodejs npm")
    APOLLO_DIR.mkdir(parents=True, exist_ok=True)
    plugin = APOLLO_DIR / "node_modules" / "@apollo" / "server-plugin-response-cache"
    if not (APOLLO_DIR / "node_modules" / "@apollo" / "server").is_dir() or not plugin.is_dir():
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error",
             "--prefix", str(APOLLO_DIR), *APOLLO_PACKAGES],
            check=True,
        )  # fmt: skip
    # ESM resolves packages from the script's folder: the server lives beside node_modules.
    server = APOLLO_DIR / "apollo-books.mjs"
    shutil.copyfile(Path(__file__).parent / "apollo-books.mjs", server)
    return server


def catalog_file(folder: Path, size: int) -> Path:
    """The seed books, then generated ones up to ``size``, in books-graphql's order."""
    books = orjson.loads(SEED_FILE.read_bytes())["books"][:size]
    for number in range(len(books), size):
        books.append(
            {
                "id": str(uuid.uuid5(GENERATED_IDS, str(number))),
                "title": f"Generated Title {number:05d}",
                "author": f"Author {number % 997:03d}",
            }
        )
    # Apollo answers in file order; books-graphql by (casefolded title, id).
    books.sort(key=lambda book: (book["title"].casefold(), book["id"]))
    path = folder / f"catalog-{size}.json"
    path.write_bytes(orjson.dumps({"books": books}))
    return path


def measure_all(apollo_server: Path, wrk: Wrk, runs: int, samples: Samples, memory: Memory) -> None:
    """Every size: a catalog of its own; every run: each peer alone on the server core."""
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "query.lua"
        script.write_text(WRK_SCRIPT)
        for size in SIZES:
            catalog = catalog_file(Path(folder), size)
            with postgres_database("books") as database:
                _measure_size(
                    apollo_server, catalog, database, size, script, wrk, runs, samples, memory
                )


def _measure_size(
    apollo_server: Path,
    catalog: Path,
    database: str,
    size: int,
    script: Path,
    wrk: Wrk,
    runs: int,
    samples: Samples,
    memory: Memory,
) -> None:
    base = dict(os.environ, LOG_LEVEL="WARNING", APP_ENV="development")
    # books-graphql's defaults: ``{ books }`` is the whole catalog at every size (the row
    # budget charges only lists beyond it; docs/api.md#bounded-work).
    books_env = dict(base, BOOKS_DATABASE_URL=database, BOOKS_SEED_FILE="")
    migrate("books_graphql", books_env)
    subprocess.run(
        [PYTHON, "-m", "books_graphql", "import", str(catalog), "--no-progress"],
        env=books_env, check=True, capture_output=True,
    )  # fmt: skip
    apollo_env = dict(base, NODE_ENV="production", BOOKS_FILE=str(catalog))
    envs = {
        "apollo": apollo_env,
        "apollo-cached": dict(apollo_env, APOLLO_RESPONSE_CACHE="1"),
        "books-uncached": dict(books_env, BOOKS_RESPONSE_CACHE_TTL_S="0"),
        "books": books_env,
    }
    commands = {
        "apollo": ["node", str(apollo_server)],
        "apollo-cached": ["node", str(apollo_server)],
        "books-uncached": [PYTHON, "-m", "books_graphql", "serve"],
        "books": [PYTHON, "-m", "books_graphql", "serve"],
    }
    reference: bytes | None = None
    for run in range(runs):
        for name in alternate(list(PEERS), run):
            port = free_port()
            env = dict(envs[name], PORT=str(port), BOOKS_PORT=str(port))
            url = f"http://127.0.0.1:{port}"
            peer = f"{name}-{size}"
            with started(peer, commands[name], env, SERVER_CORE) as process:
                answer = _wait_ready(url, process, apollo=name.startswith("apollo"))
                if reference is None:
                    reference = answer
                elif answer != reference:
                    raise SystemExit(f"{peer} answers differently from its peers")
                memory.record_idle({f"{PEERS[name]}, {size} books": process.rss_mib()})
                wrk.warm(url + "/", script=script)
                result = wrk(
                    f"{PEERS[name]}, {size} books",
                    url + "/",
                    connections=CONNECTIONS,
                    script=script,
                    watch=[process],
                )
                samples.setdefault((peer, CONNECTIONS), []).append(result)
                memory.record_after({f"{PEERS[name]}, {size} books": process.rss_mib()})


def _wait_ready(url: str, process: Process, *, apollo: bool) -> bytes:
    """Wait until the server answers the benchmark's query; return that answer."""
    if not apollo:
        wait_ready(url + "/ready", process.exited)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (left := process.exited()) is not None:
            raise SystemExit(left)
        try:
            headers = {"content-type": "application/json"}
            response = httpx.post(url + "/", content=QUERY_BODY, headers=headers, timeout=30)
            if response.status_code == 200:
                return orjson.dumps(response.json())  # Apollo ends its body with a newline
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{process.name} did not answer at {url}")


def _requests_per_s(samples: Samples, peer: str) -> list[float]:
    return [r.requests_per_s for r in samples[(peer, CONNECTIONS)]]


def _ratio(samples: Samples, ours: str, theirs: str) -> list[float]:
    return [
        o / t
        for o, t in zip(
            _requests_per_s(samples, ours), _requests_per_s(samples, theirs), strict=True
        )
    ]


def ratios(samples: Samples, sizes: Sequence[int] = SIZES) -> list[Ratio]:
    rows = []
    for size in (size for size in sizes if (f"apollo-{size}", CONNECTIONS) in samples):
        rows.append(
            Ratio(
                f"books-graphql / Apollo, caches off, {size:,} books, {CONNECTIONS} connections",
                _ratio(samples, f"books-uncached-{size}", f"apollo-{size}"),
                1.0,
            )
        )
        rows.append(
            Ratio(
                f"books-graphql / Apollo, caches on, {size:,} books, {CONNECTIONS} connections",
                _ratio(samples, f"books-{size}", f"apollo-cached-{size}"),
                1.0,
            )
        )
    return rows


def cpu_table(samples: Samples) -> list[str]:
    """CPU µs per request and per book of the catalog, each peer at each size."""
    lines = [
        "| books | peer | CPU µs/request | CPU µs/book |",
        "|---|---|---|---|",
    ]
    for size in SIZES:
        for name, label in PEERS.items():
            runs = samples.get((f"{name}-{size}", CONNECTIONS))
            if not runs:
                continue
            per_request = [run.cpu_us[f"{name}-{size}"] for run in runs]
            per_book = [us / size for us in per_request]
            lines.append(
                f"| {size:,} | {label} | {Spread.of(per_request).cell()} "
                f"| {Spread.of(per_book).cell(2)} |"
            )
    return lines


def section(samples: Samples) -> Section:
    labels = {
        f"{name}-{size}": f"{label}, {size:,} books"
        for size in SIZES
        for name, label in PEERS.items()
    }
    return Section(
        title="GraphQL: books-graphql vs Apollo Server 5",
        intro=(
            "`POST /` `{ books { title author } }` on catalogs of 24 (the seed file), 1,000 "
            "and 10,000 books: the same catalog file imported into PostgreSQL for "
            "books-graphql and loaded in memory by Apollo (their answers checked equal "
            f"before measuring). {CONNECTIONS} connections; wrk on core 0, one server at a "
            "time on core 1. Peers: Apollo Server 5 without a cache and with "
            "@apollo/server-plugin-response-cache (a 60 s cache hint on `Query.books`); "
            "books-graphql with `BOOKS_RESPONSE_CACHE_TTL_S=0` (every request executes its "
            "compiled plan over the in-memory catalog) and with its defaults (answers "
            "replayed until the catalog version changes)."
        ),
        table=[*wrk_table(samples, labels), "", *cpu_table(samples)],
        ratios=ratios(samples),
        notes=[
            "*CPU µs/book* is CPU µs/request divided by the catalog's size: the cost of one "
            "book's object in the answer (with the request's fixed cost spread over them).",
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
