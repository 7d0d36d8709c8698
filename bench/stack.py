"""The platform as the benchmarks run it: fresh PostgreSQL databases, services, nginx.

Every service is started as ``make run`` starts it (``python -m <service> serve`` after its
``migrate``), on free ports, against its own throw-away database ``bench_<name>_<random>``
on the local PostgreSQL (``BENCH_POSTGRES_URL``), with the rate limits raised out of the
way: the benchmarks measure the request path, not the limiter's refusals. A nats-server
of its own (JetStream, a throw-away store) takes the events, as ``make run``'s does, so the
outbox relays publish rather than wait for a NATS that is not there.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from harness import LOAD_CORE, SERVER_CORE, Process, started
from nginx import nginx_proxy

from api_devservers.nats_server import listening, prepare, server_command
from api_testkit.callers import Caller
from api_testkit.databases import create_database, drop_database
from api_testkit.environment import (
    addresses,
    development_environment,
    webhooks_addresses,
    write_signing_key,
)
from api_testkit.ports import free_port
from api_testkit.readiness import wait_ready

POSTGRES_URL = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
PYTHON = sys.executable
ADMIN_EMAIL = "bench-admin@example.com"
ADMIN_PASSWORD = "bench-admin-password"
NATS_START_TIMEOUT_S = 20.0
CUSTOMER_PASSWORD = "bench-customer-password"


@contextmanager
def postgres_database(label: str) -> Iterator[str]:
    """A new empty database on the benchmark's PostgreSQL server, dropped afterwards."""
    url = asyncio.run(create_database(POSTGRES_URL, f"bench_{label}"))
    try:
        yield url
    finally:
        asyncio.run(drop_database(POSTGRES_URL, url))


def base_environment(key_file: Path) -> dict[str, str]:
    """Development mode, quiet logs, every gateway limit lifted (wrk calls from one address)."""
    return development_environment(key_file, ADMIN_EMAIL, ADMIN_PASSWORD, LOG_LEVEL="WARNING")


def migrate(module: str, env: dict[str, str]) -> None:
    subprocess.run([PYTHON, "-m", module, "migrate"], env=env, check=True, capture_output=True)


def log_in(base_url: str, email: str, password: str) -> str:
    response = httpx.post(
        f"{base_url}/api/auth/token", json={"email": email, "password": password}, timeout=30
    )
    response.raise_for_status()
    token: str = response.json()["data"]["accessToken"]
    return token


def new_customer(users_url: str) -> Caller:
    email = f"bench-{uuid.uuid4().hex[:10]}@example.com"
    created = httpx.post(
        f"{users_url}/api/users",
        json={"name": "Bench Customer", "email": email, "password": CUSTOMER_PASSWORD},
        timeout=30,
    )
    created.raise_for_status()
    return Caller(created.json()["data"]["id"], log_in(users_url, email, CUSTOMER_PASSWORD))


@dataclass
class Stack:
    """Running processes by name and their base URLs."""

    processes: dict[str, Process] = field(default_factory=dict)
    urls: dict[str, str] = field(default_factory=dict)
    # What every process was started with: a benchmark starts variants of one from it.
    environment: dict[str, str] = field(default_factory=dict)
    nginx_binary: str | None = None

    def rss_mib(self) -> dict[str, float]:
        return {name: process.rss_mib() for name, process in self.processes.items()}


def wait_listening(process: Process, port: int) -> None:
    """Block until ``process`` (a server without /ready) accepts connections on ``port``."""
    deadline = time.monotonic() + NATS_START_TIMEOUT_S
    while not listening(port):
        exited = process.exited()
        if exited is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{process.name} did not start listening on {port}: {exited}")
        time.sleep(0.05)


@contextmanager
def platform(nginx: str | None = None, *, webhooks: bool = False) -> Iterator[Stack]:
    """users, orders, books, NATS and the gateway on fresh databases; nginx in front of
    users; with ``webhooks``, webhooks-service and its dispatcher too.

    The gateway (and nginx, the proxy it is compared with) share the load core with wrk,
    the services and NATS share the server core: a proxy under test competes with the load
    generator alike, whichever it is.
    """
    services = [
        ("users", [PYTHON, "-m", "users_service", "serve"], SERVER_CORE),
        ("books", [PYTHON, "-m", "books_graphql", "serve"], SERVER_CORE),
        ("orders", [PYTHON, "-m", "orders_service", "serve"], SERVER_CORE),
    ]
    if webhooks:
        services += [
            ("webhooks", [PYTHON, "-m", "webhooks_service", "serve"], SERVER_CORE),
            ("dispatcher", [PYTHON, "-m", "webhooks_service", "dispatch"], SERVER_CORE),
        ]
    services.append(("gateway", [PYTHON, "-m", "gateway", "serve"], LOAD_CORE))
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="bench-") as folder:
        names = ("users", "orders", "books", *(("webhooks",) if webhooks else ()))
        databases = {name: stack.enter_context(postgres_database(name)) for name in names}
        ports = {
            name: free_port()
            for name in ("gateway-admin", "nats", *(name for name, _, _ in services))
        }
        urls = {name: f"http://127.0.0.1:{ports[name]}" for name, _, _ in services}
        # The gateway's /ready is on its admin port, not on the public one.
        ready_urls = urls | {"gateway": f"http://127.0.0.1:{ports['gateway-admin']}"}
        env = base_environment(write_signing_key(Path(folder) / "signing-key.pem"))
        # Its users' seeds, where each process finds its own (as make run's).
        keys_dir = Path(folder) / "nats-keys"
        env |= addresses(ports, databases) | {
            "NATS_URL": f"nats://127.0.0.1:{ports['nats']}",
            "NATS_KEYS_DIR": str(keys_dir),
        }
        if webhooks:
            env |= webhooks_addresses(ports, databases)
        modules = ["users_service", "orders_service", "books_graphql"]
        for module in modules + (["webhooks_service"] if webhooks else []):
            migrate(module, env)
        running = Stack(urls=urls, environment=dict(env), nginx_binary=nginx)
        nats = server_command(ports["nats"], Path(folder) / "nats", prepare(keys_dir))
        running.processes["nats"] = stack.enter_context(started("nats", nats, env, SERVER_CORE))
        wait_listening(running.processes["nats"], ports["nats"])
        for name, command, core in services:
            running.processes[name] = stack.enter_context(started(name, command, env, core))
        for name, _, _ in services:
            wait_ready(f"{ready_urls[name]}/ready", running.processes[name].exited)
        if nginx is not None:
            port = free_port()
            running.processes["nginx"] = stack.enter_context(
                nginx_proxy(nginx, port, urls["users"], Path(folder) / "nginx")
            )
            running.urls["nginx"] = f"http://127.0.0.1:{port}"
        yield running
