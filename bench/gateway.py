"""Gateway overhead: the same authenticated GET through the gateway and directly.

    uv run python bench/gateway.py [--runs 3] [--duration 10]

Prints a markdown table and writes the raw wrk output under bench/results/. Pinning:
the load generator and the gateway share core 0, the service has core 1 (on two cores the
gateway path pays for its extra process, as it would in production on the same machine).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from harness import (
    RESULTS,
    Spread,
    WrkResult,
    ensure_apt,
    free_port,
    machine_line,
    started,
    wait_ready,
    wrk,
)

CONNECTIONS = (32, 1)


def _environment(work: Path, users_port: int, gateway_port: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "APP_ENV": "development",
            "LOG_LEVEL": "WARNING",
            "USERS_PORT": str(users_port),
            "GATEWAY_PORT": str(gateway_port),
            "USERS_DATABASE_URL": os.environ.get(
                "BENCH_USERS_DATABASE_URL", f"sqlite://{work / 'users.sqlite3'}"
            ),
            "USERS_SERVICE_URL": f"http://127.0.0.1:{users_port}",
            "JWKS_URL": f"http://127.0.0.1:{users_port}/.well-known/jwks.json",
            "RATE_LIMIT_RPS": "1000000",
            "RATE_LIMIT_BURST": "1000000",
        }
    )
    return env


def _token_and_path(users_url: str) -> tuple[str, str]:
    email = f"bench-{uuid.uuid4().hex[:8]}@example.com"
    password = "benchmark-password"
    created = httpx.post(
        f"{users_url}/api/users", json={"name": "Bench", "email": email, "password": password}
    )
    created.raise_for_status()
    token = httpx.post(f"{users_url}/api/auth/token", json={"email": email, "password": password})
    token.raise_for_status()
    return token.json()["data"]["accessToken"], f"/api/users/{created.json()['data']['id']}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10)
    args = parser.parse_args()
    ensure_apt("wrk", "wrk")

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        users_port, gateway_port = free_port(), free_port()
        env = _environment(work, users_port, gateway_port)
        python = sys.executable
        subprocess.run(
            [python, "-m", "users_service", "migrate"], env=env, check=True, capture_output=True
        )
        logs = RESULTS / "logs"
        with (
            started("users", [python, "-m", "users_service", "serve"], env, logs, core=1) as users,
            started("gateway", [python, "-m", "gateway", "serve"], env, logs, core=0) as gateway,
        ):
            users_url, gateway_url = (
                f"http://127.0.0.1:{users_port}",
                f"http://127.0.0.1:{gateway_port}",
            )
            wait_ready(f"{users_url}/ready", users)
            wait_ready(f"{gateway_url}/health", gateway)  # /ready wants every upstream
            token, path = _token_and_path(users_url)
            headers = {"Authorization": f"Bearer {token}"}
            # Warm both paths (connection pools, verification cache, JIT-free but cache-full).
            for base in (users_url, gateway_url):
                wrk(base + path, connections=8, duration_s=2, headers=headers, core=0)

            results: dict[tuple[str, int], list[WrkResult]] = {}
            for _ in range(args.runs):
                for connections in CONNECTIONS:
                    for label, base in (("direct", users_url), ("gateway", gateway_url)):
                        result = wrk(
                            base + path,
                            connections=connections,
                            duration_s=args.duration,
                            headers=headers,
                            core=0,
                        )
                        results.setdefault((label, connections), []).append(result)
            rss = {"users": users.rss_mib(), "gateway": gateway.rss_mib()}

    RESULTS.mkdir(parents=True, exist_ok=True)
    raw = "\n\n".join(
        f"### {label} c={c} run {i}\n{r.raw}"
        for (label, c), runs in results.items()
        for i, r in enumerate(runs, 1)
    )
    (RESULTS / "gateway-wrk.txt").write_text(raw)
    print(report(results, rss))


def report(results: dict[tuple[str, int], list[WrkResult]], rss: dict[str, float]) -> str:
    lines = [
        "## Gateway overhead",
        "",
        f"Machine: {machine_line()}. Same authenticated `GET /api/users/{{id}}`, wrk -t1.",
        "",
        "| connections | path | requests/s | p50 ms | p99 ms | errors |",
        "|---|---|---|---|---|---|",
    ]
    for (label, c), runs in sorted(results.items(), key=lambda item: (-item[0][1], item[0][0])):
        lines.append(
            f"| {c} | {label} | {Spread.of([r.requests_per_s for r in runs]).cell()} "
            f"| {Spread.of([r.p50_ms for r in runs]).cell(3)} "
            f"| {Spread.of([r.p99_ms for r in runs]).cell(3)} | {sum(r.errors for r in runs)} |"
        )
    direct32 = [r.requests_per_s for r in results[("direct", 32)]]
    gateway32 = [r.requests_per_s for r in results[("gateway", 32)]]
    ratios = [g / d for g, d in zip(gateway32, direct32, strict=True)]
    added = [
        g.p50_ms - d.p50_ms
        for g, d in zip(results[("gateway", 1)], results[("direct", 1)], strict=True)
    ]
    lines += [
        "",
        f"- gateway/direct throughput at 32 connections: {Spread.of(ratios).cell(2)} "
        "(target ≥ 0.5)",
        f"- added p50 latency at 1 connection: {Spread.of(added).cell(3)} ms (target ≤ 0.3 ms)",
        f"- RSS after the runs: users-service {rss['users']:.0f} MiB, "
        f"gateway {rss['gateway']:.0f} MiB",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
