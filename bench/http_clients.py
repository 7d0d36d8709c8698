"""HTTP client for service-to-service calls: aiohttp's ClientSession vs httpx's AsyncClient.

    uv run python bench/http_clients.py [--runs 3] [--duration 6]
    uv run python bench/http_clients.py --quick      # 1 run of 2 s per figure

One small Sanic app (``serve``, below) on core 1 answers ``GET /api/users/me`` with a
~300-byte JSON body (the shape of users-service's answer to a caller-standing question) and
``POST /api/orders`` with the same body, whatever 2 KiB JSON it was sent; keep-alive
HTTP/1.1. Each figure is one fresh client process (``client``, below) on core 0, under
uvloop as the services run: a warm-up, then ``--duration`` seconds of 1 or 32 requests in
flight at once (each a loop of awaited requests), timing every request. The client's CPU
time (``time.process_time()`` in the client process, over the measured seconds only) per
1,000 requests is the figure that matters on a 2-core machine: the caller pays it on the
core its own requests need.

The peers, configured as a service's would be:

- **aiohttp**: ``api_shared.http.HttpSession``'s session, read as ``Replicas.get`` reads
  (``async with session.get(...)``, then ``read()``);
- **httpx**: ``httpx.AsyncClient`` on HTTP/1.1, its pool limits raised to aiohttp's
  connector's (100 connections, every one kept alive), the same total timeout, and
  ``trust_env=False`` (aiohttp reads no proxy settings from the environment either).

Both send the headers a service's call carries (``Accept``, a bearer token, ``X-Request-ID``)
and read the whole body as bytes; the POST's body is encoded once, beforehand (what is
measured is the client, not a JSON encoder). Nothing is asserted: every non-2xx answer is
counted as an error in the table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import orjson
from harness import LOAD_CORE, RESULTS, SERVER_CORE, Spread, WrkResult, alternate, pinned, started
from report import Ratio, Samples, Section, cli_options
from sanic import Request, Sanic
from sanic.response import HTTPResponse

from api_testkit.ports import free_port
from api_testkit.readiness import wait_ready

PYTHON = sys.executable
SCRIPT = str(Path(__file__).resolve())
CLIENTS = ("aiohttp", "httpx")
REQUESTS = ("get", "post")
CONNECTIONS = (32, 1)
WARM_S = 1.0
TIMEOUT_S = 3.0  # the services' call timeout is of this order; no request comes near it
QUICK = argparse.Namespace(runs=1, duration=2)
LABELS = {
    "aiohttp-get": "aiohttp, GET (~300 B answer)",
    "httpx-get": "httpx, GET (~300 B answer)",
    "aiohttp-post": "aiohttp, POST 2 KiB JSON",
    "httpx-post": "httpx, POST 2 KiB JSON",
}
STANDING_PATH = "/api/users/me"
POST_PATH = "/api/orders"
STANDING = orjson.dumps(
    {
        "id": "0b7f3c1e-5d2a-4e8b-9f61-2c4d8a7e9b10",
        "name": "Ada Lovelace",
        "email": "ada.lovelace@example.com",
        "role": "customer",
        "isActive": True,
        "createdAt": "2026-11-24T09:21:00Z",
        "updatedAt": "2026-11-24T09:21:00Z",
        "emailVerified": True,
        "sessionId": "6a1e2f4c-8b3d-4c7a-a5e9-0d1f2b3c4d5e",
        "scopes": ["orders:read", "orders:write", "users:read"],
    }
)
HEADERS = {
    "Accept": "application/json",
    "Authorization": "Bearer " + "e" * 36 + "." + "p" * 180 + "." + "s" * 86,  # a token's size
    "X-Request-ID": "5f0c6b2e9a1d4e7f8c3b2a1d0e9f8c7b",
}


def order_body(size: int = 2048) -> bytes:
    """A JSON order of exactly ``size`` bytes: items, and a note padding it out."""
    items = [{"sku": f"SKU-{i:05d}", "quantity": i % 5 + 1, "unitPrice": "19.90"}
             for i in range(24)]  # fmt: skip
    body = {"items": items, "note": ""}
    padding = size - len(orjson.dumps(body))
    if padding < 0:
        raise ValueError(f"an order body of {size} bytes cannot hold its items")
    return orjson.dumps({**body, "note": "n" * padding})


# The server: a separate process, on the server core.


def serve(port: int) -> None:
    app = Sanic("http_clients_bench")
    app.config.ACCESS_LOG = False
    app.config.KEEP_ALIVE_TIMEOUT = 75

    @app.get("/health")
    async def health(request: Request) -> HTTPResponse:
        return HTTPResponse(b'{"status":"ok"}', content_type="application/json")

    @app.get(STANDING_PATH)
    async def standing(request: Request) -> HTTPResponse:
        return HTTPResponse(STANDING, content_type="application/json")

    @app.post(POST_PATH)
    async def order(request: Request) -> HTTPResponse:
        status = 201 if request.body else 400  # every byte was read before this runs
        return HTTPResponse(STANDING, status=status, content_type="application/json")

    app.run(host="127.0.0.1", port=port, single_process=True, access_log=False, motd=False)


# The client: a fresh process per figure, on the load core.

Send = Callable[[], Awaitable[int]]


@dataclass(frozen=True)
class Driven:
    """What a client process measured: over ``seconds``, ``latencies_s`` and the CPU spent."""

    seconds: float
    cpu_s: float
    latencies_s: list[float]
    errors: int

    def summary(self) -> dict[str, float]:
        requests = len(self.latencies_s)
        percentiles = statistics.quantiles(self.latencies_s, n=100, method="inclusive")
        return {
            "requests": requests,
            "requests_per_s": requests / self.seconds,
            "p50_ms": statistics.median(self.latencies_s) * 1000,
            "p99_ms": percentiles[98] * 1000,
            "errors": self.errors,
            "cpu_ms_per_1000": self.cpu_s * 1000 / max(requests, 1) * 1000,
        }


async def drive(send: Send, connections: int, seconds: float) -> Driven:
    """``connections`` loops of ``send`` until ``seconds`` have passed, each request timed."""
    latencies: list[float] = []
    errors = 0

    async def loop(deadline: float) -> None:
        nonlocal errors
        while (began := time.perf_counter()) < deadline:
            status = await send()
            latencies.append(time.perf_counter() - began)
            errors += not 200 <= status < 300

    cpu_before, wall_before = time.process_time(), time.perf_counter()
    await asyncio.gather(*(loop(wall_before + seconds) for _ in range(connections)))
    wall, cpu = time.perf_counter() - wall_before, time.process_time() - cpu_before
    return Driven(wall, cpu, latencies, errors)


async def aiohttp_client(base_url: str, request: str, connections: int, seconds: float) -> Driven:
    from api_shared.http import HttpSession

    http = HttpSession(timeout_s=TIMEOUT_S)  # exactly as a service opens it
    await http.start()
    session, body = http.session, order_body()
    posted = {**HEADERS, "Content-Type": "application/json"}

    async def get() -> int:
        async with session.get(base_url + STANDING_PATH, headers=HEADERS) as response:
            await response.read()
            return response.status

    async def post() -> int:
        async with session.post(base_url + POST_PATH, data=body, headers=posted) as response:
            await response.read()
            return response.status

    try:
        send = get if request == "get" else post
        await drive(send, connections, WARM_S)
        return await drive(send, connections, seconds)
    finally:
        await http.stop()


async def httpx_client(base_url: str, request: str, connections: int, seconds: float) -> Driven:
    import httpx

    limit = await aiohttp_pool_limit()  # httpx keeps 20 of its 100 alive by default
    client = httpx.AsyncClient(
        timeout=httpx.Timeout(TIMEOUT_S),
        limits=httpx.Limits(max_connections=limit, max_keepalive_connections=limit),
        trust_env=False,
    )
    body = order_body()
    posted = {**HEADERS, "Content-Type": "application/json"}

    async def get() -> int:
        response = await client.get(base_url + STANDING_PATH, headers=HEADERS)
        return response.status_code  # the body is read: httpx reads it before returning

    async def post() -> int:
        response = await client.post(base_url + POST_PATH, content=body, headers=posted)
        return response.status_code

    try:
        send = get if request == "get" else post
        await drive(send, connections, WARM_S)
        return await drive(send, connections, seconds)
    finally:
        await client.aclose()


async def aiohttp_pool_limit() -> int:
    """How many connections the services' aiohttp session keeps (all of them alive)."""
    from api_shared.http import HttpSession

    http = HttpSession(timeout_s=TIMEOUT_S)
    await http.start()
    try:
        return http.session.connector.limit if http.session.connector is not None else 100
    finally:
        await http.stop()


def client(argv: list[str]) -> None:
    """One figure: prints its summary as one JSON line."""
    import uvloop

    parser = argparse.ArgumentParser(prog="http_clients.py client")
    parser.add_argument("name", choices=CLIENTS)
    parser.add_argument("request", choices=REQUESTS)
    parser.add_argument("--url", required=True)
    parser.add_argument("--connections", type=int, required=True)
    parser.add_argument("--duration", type=float, required=True)
    options = parser.parse_args(argv)
    run = aiohttp_client if options.name == "aiohttp" else httpx_client
    driven = uvloop.run(run(options.url, options.request, options.connections, options.duration))
    print(json.dumps(driven.summary()))


# The bench: a server per run, a client process per figure.


def measure_client(
    name: str, request: str, base_url: str, connections: int, duration_s: int
) -> WrkResult:
    command = [PYTHON, SCRIPT, "client", name, request, "--url", base_url,
               "--connections", str(connections), "--duration", str(duration_s)]  # fmt: skip
    line = subprocess.run(
        pinned(command, LOAD_CORE), capture_output=True, text=True, check=True
    ).stdout.strip()
    figures = json.loads(line)
    return WrkResult(
        requests_per_s=figures["requests_per_s"],
        p50_ms=figures["p50_ms"],
        p99_ms=figures["p99_ms"],
        errors=int(figures["errors"]),
        raw=f"### {name} {request.upper()} (c={connections}, {duration_s} s)\n{line}\n",
        requests=int(figures["requests"]),
        # µs per request is ms per 1,000 requests: the same number
        cpu_us={"client": figures["cpu_ms_per_1000"]},
    )


def measure_run(run: int, duration_s: int, samples: Samples) -> None:
    port = free_port()
    server_command = [PYTHON, SCRIPT, "serve", str(port)]
    with started("http-clients-server", server_command, dict(os.environ), SERVER_CORE) as server:
        base_url = f"http://127.0.0.1:{port}"
        wait_ready(base_url + "/health", server.exited)
        for connections in CONNECTIONS:
            for request in REQUESTS:
                for name in alternate(CLIENTS, run):
                    result = measure_client(name, request, base_url, connections, duration_s)
                    samples.setdefault((f"{name}-{request}", connections), []).append(result)


def measure_all(runs: int, duration_s: int, samples: Samples) -> None:
    for run in range(runs):
        measure_run(run, duration_s, samples)
    RESULTS.mkdir(parents=True, exist_ok=True)
    raw = [result.raw for results in samples.values() for result in results]
    (RESULTS / "http-clients.txt").write_text("\n".join(raw))


def table(samples: Samples) -> list[str]:
    lines = [
        "| connections | client, request | requests/s | p50 ms | p99 ms | errors "
        "| client CPU ms per 1,000 requests |",
        "|---|---|---|---|---|---|---|",
    ]
    for connections in CONNECTIONS:
        for peer, label in LABELS.items():
            runs = samples[(peer, connections)]
            lines.append(
                f"| {connections} | {label} "
                f"| {Spread.of([r.requests_per_s for r in runs]).cell()} "
                f"| {Spread.of([r.p50_ms for r in runs]).cell(3)} "
                f"| {Spread.of([r.p99_ms for r in runs]).cell(3)} "
                f"| {sum(r.errors for r in runs)} "
                f"| {Spread.of([r.cpu_us['client'] for r in runs]).cell(1)} |"
            )
    return lines


def _case(request: str, connections: int) -> str:
    kind = "GET" if request == "get" else "POST 2 KiB"
    return f"{kind}, {connections} connection{'s' if connections > 1 else ''}"


def _httpx_over_aiohttp(samples: Samples, request: str, connections: int, cpu: bool) -> list[float]:
    pairs = zip(samples[(f"httpx-{request}", connections)],
                samples[(f"aiohttp-{request}", connections)], strict=True)  # fmt: skip
    if cpu:
        return [x.cpu_us["client"] / a.cpu_us["client"] for x, a in pairs]
    return [x.requests_per_s / a.requests_per_s for x, a in pairs]


SWITCHING = (
    "Switching would take: `api_shared.http` (`HttpSession` over an `httpx.AsyncClient`, "
    "`Replicas.get`, `FAILURES` as `httpx.HTTPError`), `api_shared.auth.keys` (the JWKS "
    "fetch), `api_shared.tracing` (the httpx instrumentation instead of aiohttp's), "
    "webhooks-service's deliverer and its address-pinning resolver "
    "(`webhooks_service/addresses.py`, an aiohttp resolver: with httpx, a transport of its "
    "own), their tests, and the dependencies of shared/, orders-service/ and "
    "webhooks-service/."
)


def decision(cpu_ratios: list[Ratio]) -> str:
    """The choice the figures make: the client that costs the caller less CPU per request."""
    medians = [Spread.of(ratio.values).median for ratio in cpu_ratios]
    low, high = min(medians), max(medians)
    spread = f"{low:.2f}..{high:.2f}"
    if low > 1.1:
        return (
            f"**Decision: aiohttp stays the services' one client.** httpx costs the calling "
            f"process more CPU per request in every case measured ({spread} times aiohttp's, "
            "the medians of the ratios above), and on a 2-core machine that CPU is taken from "
            "the requests the caller is serving. httpx stays what the tests and the benches "
            "drive the platform with, from outside."
        )
    if high < 0.9:
        return (
            f"**httpx is the cheaper client** ({spread} times aiohttp's CPU per request): it "
            f"should become the services' one client. {SWITCHING}"
        )
    return (
        f"**No clear winner** (httpx costs {spread} times aiohttp's CPU per request): "
        f"aiohttp stays, as switching would be work for no gain. {SWITCHING}"
    )


def section(samples: Samples) -> Section:
    cases = [(request, connections) for connections in CONNECTIONS for request in REQUESTS]
    cpu = [Ratio(f"httpx / aiohttp client CPU per request, {_case(request, connections)}",
                 _httpx_over_aiohttp(samples, request, connections, cpu=True), None,
                 higher_is_better=False) for request, connections in cases]  # fmt: skip
    throughput = [Ratio(f"httpx / aiohttp throughput, {_case(request, connections)}",
                        _httpx_over_aiohttp(samples, request, connections, cpu=False), None)
                  for request, connections in cases]  # fmt: skip
    return Section(
        title="HTTP client for service-to-service calls",
        intro=(
            f"aiohttp {version('aiohttp')} (`api_shared.http.HttpSession`'s session) vs "
            f"httpx {version('httpx')} (`httpx.AsyncClient`, HTTP/1.1, its pool limits raised "
            "to aiohttp's), each in a fresh client process under uvloop on core 0, calling one "
            "Sanic app on core 1 over keep-alive HTTP/1.1: `GET` answered with ~300 bytes of "
            "JSON (the size of users-service's caller-standing answer) and `POST` of a 2 KiB "
            "JSON body, 1 and 32 requests in flight. *Client CPU*: `time.process_time()` of "
            "the client process over the measured seconds, per 1,000 requests: what a service "
            "pays, on its own core, for each call it makes (bench/http_clients.py; "
            "`python bench/run.py http` measures this section alone)."
        ),
        table=table(samples),
        ratios=[*cpu, *throughput],
        notes=[decision(cpu), ""],  # a paragraph of its own
    )


def main() -> None:
    if sys.argv[1:2] == ["serve"]:
        serve(int(sys.argv[2]))
        return
    if sys.argv[1:2] == ["client"]:
        client(sys.argv[2:])
        return
    quick = "--quick" in sys.argv[1:]
    options = QUICK if quick else cli_options(__doc__)
    samples: Samples = {}
    measure_all(options.runs, options.duration, samples)
    print(section(samples).markdown())


if __name__ == "__main__":
    main()
