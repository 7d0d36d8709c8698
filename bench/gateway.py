"""Gateway overhead: the same authenticated GET directly, through the gateway, through nginx.

    uv run python bench/gateway.py [--runs 3] [--duration 6]

A customer reads their own user (``GET /api/users/{id}`` with a bearer token) from
users-service directly, through the gateway (which checks the token too, then proxies over
its keep-alive pool) and through nginx proxying the same users-service. The proxies share
core 0 with wrk, users-service has core 1. Targets: gateway/direct throughput ≥ 0.5 at 32
connections; added p50 latency ≤ 0.3 ms at 1 connection.
"""

from __future__ import annotations

from harness import Wrk, alternate
from nginx import install_nginx
from report import Ratio, Samples, Section, cli_options, wrk_table
from stack import Stack, new_customer, platform

CONNECTIONS = (32, 1)
PATHS = {
    "direct": "users-service directly",
    "gateway": "through the gateway",
    "nginx": "through nginx",
}


def measure(stack: Stack, wrk: Wrk, samples: Samples) -> None:
    """One run: every path at every connection count, peers back to back."""
    caller = new_customer(stack.urls["users"])
    path = f"/api/users/{caller.id}"
    bases = {name: stack.urls["users" if name == "direct" else name] for name in PATHS}
    users = stack.processes["users"]
    watched = {
        name: [users] if name == "direct" else [stack.processes[name], users] for name in PATHS
    }
    for base in bases.values():
        wrk.warm(base + path, headers=caller.headers)
    for connections in CONNECTIONS:
        run = len(samples.get(("direct", connections), []))
        for name in alternate(list(bases), run):
            base = bases[name]
            result = wrk(
                f"GET /api/users/{{id}} {PATHS[name]}",
                base + path,
                connections=connections,
                headers=caller.headers,
                watch=watched[name],
            )
            samples.setdefault((name, connections), []).append(result)


def section(samples: Samples) -> Section:
    def ratio_of(proxy: str) -> list[float]:
        pairs = zip(samples[(proxy, 32)], samples[("direct", 32)], strict=True)
        return [p.requests_per_s / d.requests_per_s for p, d in pairs]

    def added_p50(proxy: str) -> list[float]:
        pairs = zip(samples[(proxy, 1)], samples[("direct", 1)], strict=True)
        return [p.p50_ms - d.p50_ms for p, d in pairs]

    return Section(
        title="Gateway overhead",
        intro=(
            "The same authenticated `GET /api/users/{id}` (a customer reading itself) "
            "straight to users-service, through the gateway, and through nginx (Debian "
            "package, one worker, keep-alive upstream) in front of the same users-service. "
            "wrk and the proxy on core 0, users-service on core 1."
        ),
        table=wrk_table(samples, PATHS),
        ratios=[
            Ratio("gateway / direct throughput, 32 connections", ratio_of("gateway"), 0.5),
            Ratio("nginx / direct throughput, 32 connections", ratio_of("nginx"), None),
            Ratio(
                "gateway added p50 latency, 1 connection",
                added_p50("gateway"),
                0.3,
                higher_is_better=False,
                unit="ms",
                digits=3,
            ),
            Ratio(
                "nginx added p50 latency, 1 connection",
                added_p50("nginx"),
                None,
                higher_is_better=False,
                unit="ms",
                digits=3,
            ),
        ],
    )


def main() -> None:
    options = cli_options(__doc__)
    nginx = install_nginx()
    wrk = Wrk(options.duration)
    samples: Samples = {}
    for _ in range(options.runs):
        with platform(nginx=nginx) as stack:
            measure(stack, wrk, samples)
    wrk.save("gateway")
    print(section(samples).markdown())


if __name__ == "__main__":
    main()
