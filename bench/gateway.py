"""Gateway overhead: the same authenticated GET directly, through the gateway, through nginx.

    uv run python bench/gateway.py [--runs 3] [--duration 6]

A customer reads their own user (``GET /api/users/{id}`` with a bearer token) from
users-service directly, through the gateway (which checks the token too, then proxies over
its keep-alive pool) and through nginx proxying the same users-service. The proxies share
core 0 with wrk, and at 32 connections with PostgreSQL (``database_on_load_core``);
users-service has core 1.
Targets: gateway/direct throughput ≥ 0.9 at 32 connections; added p50 latency ≤ 0.3 ms at
1 connection. Directly and through the gateway are also measured at 32 connections with
PostgreSQL unpinned, as this section was before 2026-11-24, for reference.

Each path is measured twice: access logs off (the platform's processes, LOG_LEVEL=WARNING,
nginx ``access_log off``), and on, as in production (a users-service and a gateway started
beside the platform's at LOG_LEVEL=INFO, one JSON line per request on stdout, which the
harness sends to a file under bench/results/logs; an nginx writing a JSON access line per
request to a file there too). The targets hold for both.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import profiles
from harness import (
    LOAD_CORE,
    SERVER_CORE,
    Process,
    Wrk,
    WrkResult,
    alternate,
    database_on_load_core,
    started,
)
from nginx import install_nginx, nginx_proxy
from profiles import Profile
from report import Ratio, Samples, Section, cli_options, wrk_table
from stack import PYTHON, Stack, new_customer, platform

from api_testkit.ports import free_port
from api_testkit.readiness import wait_ready

CONNECTIONS = (32, 1)
PATHS = {
    "direct": "users-service directly",
    "gateway": "through the gateway",
    "nginx": "through nginx",
    "direct-logs": "users-service directly, access logs on",
    "gateway-logs": "through the gateway, access logs on",
    "nginx-logs": "through nginx, access logs on",
}
LOGS_ON = "-logs"  # the suffix of a peer (and of its processes) with access logs on
UNPINNED = "-unpinned"  # the suffix of a peer measured with PostgreSQL unpinned
REFERENCE = {
    f"direct{UNPINNED}": "users-service directly, PostgreSQL unpinned",
    f"gateway{UNPINNED}": "through the gateway, PostgreSQL unpinned",
}


@contextmanager
def logged_peers(stack: Stack) -> Iterator[None]:
    """users-service, the gateway in front of it and nginx in front of it, with access
    logs on, beside the platform's (same database); in ``stack`` until the block ends."""
    env = dict(stack.environment, LOG_LEVEL="INFO")
    ports = {name: free_port() for name in ("users", "gateway", "gateway-admin", "nginx")}
    urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    variants = {
        "users": ([PYTHON, "-m", "users_service", "serve"], SERVER_CORE,
                  f"{urls['users']}/ready",
                  {"USERS_PORT": str(ports["users"])}),
        "gateway": ([PYTHON, "-m", "gateway", "serve"], LOAD_CORE,
                    f"{urls['gateway-admin']}/ready",
                    {"GATEWAY_PORT": str(ports["gateway"]),
                     "GATEWAY_ADMIN_PORT": str(ports["gateway-admin"]),
                     "USERS_SERVICE_URL": urls["users"]}),
    }  # fmt: skip
    names = [f"{name}{LOGS_ON}" for name in (*variants, "nginx")]
    with ExitStack() as peers, tempfile.TemporaryDirectory(prefix="bench-nginx-") as folder:
        for name, (command, core, ready, variables) in variants.items():
            process = peers.enter_context(
                started(f"{name}{LOGS_ON}", command, env | variables, core)
            )
            wait_ready(ready, process.exited)
            stack.processes[f"{name}{LOGS_ON}"] = process
            stack.urls[f"{name}{LOGS_ON}"] = urls[name]
        assert stack.nginx_binary is not None  # the platform was given nginx
        stack.processes[f"nginx{LOGS_ON}"] = peers.enter_context(
            nginx_proxy(stack.nginx_binary, ports["nginx"], urls["users"], Path(folder),
                        name=f"nginx{LOGS_ON}", access_log=True)
        )  # fmt: skip
        stack.urls[f"nginx{LOGS_ON}"] = urls["nginx"]
        try:
            yield
        finally:
            for name in names:
                stack.processes.pop(name, None)
                stack.urls.pop(name, None)


PROFILED = ("gateway", "gateway-logs")
UNMOVED = (
    "**PostgreSQL stayed unpinned** in at least one run: its processes could not be moved "
    "to core 0 here (not Linux, or not allowed to set their CPU affinity: run as root), so "
    "every row is measured as the reference rows are."
)


def measure(
    stack: Stack, wrk: Wrk, samples: Samples, where: dict[str, Profile] | None = None
) -> bool:
    """One run: every path at every connection count, logs off and on, peers back to back;
    and once, when ``where`` is given and empty, the gateway's profiles. Whether PostgreSQL
    could be moved to the load core for them."""
    caller = new_customer(stack.urls["users"])
    path = f"/api/users/{caller.id}"
    with logged_peers(stack):
        for name in PATHS:
            wrk.warm(_process(stack, name, "url") + path, headers=caller.headers)
        run = len(samples.get(("direct", CONNECTIONS[0]), []))
        database_pinned, profile = True, where is not None and not where
        for connections in CONNECTIONS:
            with _database_placed(connections) as moved:
                database_pinned &= moved
                for name in alternate(list(PATHS), run):
                    samples.setdefault((name, connections), []).append(
                        _load(stack, wrk, name, PATHS[name], path, caller.headers, connections)
                    )
                for peer in PROFILED if profile else ():
                    gateway = stack.processes[_process(stack, peer, "name")]
                    found = profiles.record(
                        wrk, [gateway], _process(stack, peer, "url") + path,
                        connections=connections, headers=caller.headers,
                    )  # fmt: skip
                    assert where is not None
                    where[f"{PATHS[peer]}, {connections} conn."] = found[gateway.name]
        for name in alternate(list(REFERENCE), run):
            peer = name.removesuffix(UNPINNED)
            samples.setdefault((name, CONNECTIONS[0]), []).append(
                _load(stack, wrk, peer, REFERENCE[name], path, caller.headers, CONNECTIONS[0])
            )
    return database_pinned


@contextmanager
def _database_placed(connections: int) -> Iterator[bool]:
    """PostgreSQL on the load core while the cores are saturated (32 connections): only then
    does its placement decide who pays for it. One connection at a time keeps it unpinned,
    as measured before: nothing waits for a core, and a hop between cores is the cost."""
    if connections == 1:
        yield True
        return
    with database_on_load_core() as moved:
        yield moved


def _load(
    stack: Stack,
    wrk: Wrk,
    peer: str,
    label: str,
    path: str,
    headers: dict[str, str],
    connections: int,
) -> WrkResult:
    """One measured wrk run of ``peer``'s path."""
    return wrk(
        f"GET /api/users/{{id}} {label}",
        _process(stack, peer, "url") + path,
        connections=connections,
        headers=headers,
        watch=_watched(stack, peer),
    )


def _process(stack: Stack, peer: str, what: str) -> str:
    """The name (``what="name"``) or base URL (``"url"``) of the process wrk calls."""
    proxy, logs = peer.removesuffix(LOGS_ON), LOGS_ON if peer.endswith(LOGS_ON) else ""
    name = f"{'users' if proxy == 'direct' else proxy}{logs}"
    return stack.urls[name] if what == "url" else name


def _watched(stack: Stack, peer: str) -> list[Process]:
    """The proxy (if any) and the users-service behind it."""
    logs = LOGS_ON if peer.endswith(LOGS_ON) else ""
    names = dict.fromkeys([_process(stack, peer, "name"), f"users{logs}"])
    return [stack.processes[name] for name in names]


def section(
    samples: Samples, where: dict[str, Profile] | None = None, *, database_pinned: bool = True
) -> Section:
    """The section; ``database_pinned``: whether PostgreSQL was on the load core in every run."""

    def ratio_of(proxy: str, logs: str) -> list[float]:
        pairs = zip(samples[(proxy + logs, 32)], samples[("direct" + logs, 32)], strict=True)
        return [p.requests_per_s / d.requests_per_s for p, d in pairs]

    def added_p50(proxy: str, logs: str) -> list[float]:
        pairs = zip(samples[(proxy + logs, 1)], samples[("direct" + logs, 1)], strict=True)
        return [p.p50_ms - d.p50_ms for p, d in pairs]

    ratios = []
    for logs, said in (("", ""), (LOGS_ON, ", access logs on")):
        ratios += [
            Ratio(f"gateway / direct throughput, 32 connections{said}",
                  ratio_of("gateway", logs), 0.9),
            Ratio(f"nginx / direct throughput, 32 connections{said}",
                  ratio_of("nginx", logs), None),
            Ratio(f"gateway added p50 latency, 1 connection{said}", added_p50("gateway", logs),
                  0.3, higher_is_better=False, unit="ms", digits=3),
            Ratio(f"nginx added p50 latency, 1 connection{said}", added_p50("nginx", logs),
                  None, higher_is_better=False, unit="ms", digits=3),
        ]  # fmt: skip
    ratios.append(
        Ratio("gateway / direct throughput, 32 connections, PostgreSQL unpinned (reference)",
              ratio_of("gateway", UNPINNED), None)
    )  # fmt: skip
    return Section(
        title="Gateway overhead",
        intro=(
            "The same authenticated `GET /api/users/{id}` (a customer reading itself) "
            "straight to users-service, through the gateway, and through nginx (Debian "
            "package, one worker, keep-alive upstream) in front of the same users-service. "
            "wrk and the proxy on core 0 (PostgreSQL too, below), users-service on core 1. "
            "Each path with access logs off (LOG_LEVEL=WARNING, nginx `access_log off`) and "
            "on, as in production (LOG_LEVEL=INFO: one JSON line per request on stdout, to a "
            "file; nginx a JSON access line per request to a file): a users-service, gateway "
            "and nginx started beside the platform's, on the same database.\n\n"
            "PostgreSQL is on core 0 for the 32-connection runs. Unpinned (as in this section "
            "until 2026-11-24), a backend wakes on whichever core is idle, so a proxy that "
            "keeps core 0 busy sends the database's work to core 1, where it is taken from "
            "users-service and not from the proxy that displaced it. On core 0, the proxy, wrk "
            "and the database share one core and users-service has the other to itself. "
            "Directly and through the gateway are also measured at 32 connections with "
            "PostgreSQL unpinned, for reference. At 1 connection nothing waits for a core and "
            "PostgreSQL stays unpinned, as before: pinned, each query would add a hop between "
            "cores to the latency measured."
        ),
        table=wrk_table(samples, PATHS | REFERENCE),
        ratios=ratios,
        notes=[
            *([] if database_pinned else [UNMOVED, ""]),
            *profiles.notes("The gateway's CPU", where),
        ],
    )


def main() -> None:
    options = cli_options(__doc__)
    nginx = install_nginx()
    wrk = Wrk(options.duration)
    samples: Samples = {}
    where: dict[str, Profile] = {}
    database_pinned = True
    for _ in range(options.runs):
        with platform(nginx=nginx) as stack:
            database_pinned &= measure(stack, wrk, samples, where)
    wrk.save("gateway")
    print(section(samples, where, database_pinned=database_pinned).markdown())


if __name__ == "__main__":
    main()
