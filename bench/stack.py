"""The platform as the benchmarks run it: fresh PostgreSQL databases, services, nginx.

Every service is started as ``make run`` starts it (``python -m <service> serve`` after its
``migrate``), on free ports, against its own throw-away database ``bench_<name>_<random>``
on the local PostgreSQL (``BENCH_POSTGRES_URL``), with the rate limits raised out of the
way: the benchmarks measure the request path, not the limiter's refusals.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from harness import LOAD_CORE, SERVER_CORE, Process, free_port, started, wait_ready
from nginx import nginx_proxy

POSTGRES_URL = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
PYTHON = sys.executable
ADMIN_EMAIL = "bench-admin@example.com"
ADMIN_PASSWORD = "bench-admin-password"
CUSTOMER_PASSWORD = "bench-customer-password"


async def _postgres(statement: str) -> None:
    connection = await asyncpg.connect(POSTGRES_URL)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@contextmanager
def postgres_database(label: str) -> Iterator[str]:
    """A new empty database on the benchmark's PostgreSQL server, dropped afterwards."""
    name = f"bench_{label}_{uuid.uuid4().hex[:8]}"
    asyncio.run(_postgres(f'CREATE DATABASE "{name}"'))
    try:
        yield POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        asyncio.run(_postgres(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def signing_key(folder: Path) -> Path:
    """A fresh Ed25519 key, as an operator provisions one (``openssl genpkey``)."""
    path = folder / "signing-key.pem"
    path.write_bytes(
        Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)
    return path


def base_environment(key_file: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("BENCH_")}
    env.update(
        {
            "APP_ENV": "development",
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            "JWT_PRIVATE_KEY_FILE": str(key_file),
            "ADMIN_EMAIL": ADMIN_EMAIL,
            "ADMIN_PASSWORD": ADMIN_PASSWORD,
            # wrk calls from one address: every gateway limit is lifted.
            "RATE_LIMIT_RPS": "1000000",
            "RATE_LIMIT_BURST": "1000000",
            "ADDRESS_RATE_LIMIT_RPS": "1000000",
            "ADDRESS_RATE_LIMIT_BURST": "1000000",
            "LOGIN_RATE_LIMIT_PER_MINUTE": "1000000",
            "LOGIN_ACCOUNT_RATE_LIMIT_PER_MINUTE": "1000000",
            "LOGIN_ACCOUNT_CEILING_PER_MINUTE": "1000000",
            "SIGNUP_RATE_LIMIT_PER_MINUTE": "1000000",
        }
    )
    return env


def migrate(module: str, env: dict[str, str]) -> None:
    subprocess.run([PYTHON, "-m", module, "migrate"], env=env, check=True, capture_output=True)


def log_in(base_url: str, email: str, password: str) -> str:
    response = httpx.post(
        f"{base_url}/api/auth/token", json={"email": email, "password": password}, timeout=30
    )
    response.raise_for_status()
    token: str = response.json()["data"]["accessToken"]
    return token


@dataclass
class Caller:
    """A user of the benchmark and its bearer token."""

    id: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


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

    def rss_mib(self) -> dict[str, float]:
        return {name: process.rss_mib() for name, process in self.processes.items()}


@contextmanager
def platform(nginx: str | None = None) -> Iterator[Stack]:
    """users, orders, books and the gateway on fresh databases; nginx in front of users.

    The gateway (and nginx, the proxy it is compared with) share the load core with wrk,
    the services share the server core: a proxy under test competes with the load
    generator alike, whichever it is.
    """
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="bench-") as folder:
        databases = {
            name: stack.enter_context(postgres_database(name))
            for name in ("users", "orders", "books")
        }
        ports = {name: free_port() for name in ("gateway", "users", "orders", "books")}
        urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
        # The gateway's /ready is on its admin port, not on the public one.
        admin_port = free_port()
        ready_urls = urls | {"gateway": f"http://127.0.0.1:{admin_port}"}
        env = base_environment(signing_key(Path(folder)))
        env.update(
            {
                "GATEWAY_PORT": str(ports["gateway"]),
                "GATEWAY_ADMIN_PORT": str(admin_port),
                "USERS_PORT": str(ports["users"]),
                "ORDERS_PORT": str(ports["orders"]),
                "BOOKS_PORT": str(ports["books"]),
                "USERS_DATABASE_URL": databases["users"],
                "ORDERS_DATABASE_URL": databases["orders"],
                "BOOKS_DATABASE_URL": databases["books"],
                "USERS_SERVICE_URL": urls["users"],
                "ORDERS_SERVICE_URL": urls["orders"],
                "BOOKS_SERVICE_URL": urls["books"],
                "BOOKS_GRAPHQL_URL": f"{urls['books']}/graphql",
                "JWKS_URL": f"{urls['users']}/.well-known/jwks.json",
            }
        )
        for module in ("users_service", "orders_service", "books_graphql"):
            migrate(module, env)
        running = Stack(urls=urls)
        for name, module, core in (
            ("users", "users_service", SERVER_CORE),
            ("books", "books_graphql", SERVER_CORE),
            ("orders", "orders_service", SERVER_CORE),
            ("gateway", "gateway", LOAD_CORE),
        ):
            command = [PYTHON, "-m", module, "serve"]
            running.processes[name] = stack.enter_context(started(name, command, env, core))
        for name in ("users", "books", "orders", "gateway"):
            wait_ready(f"{ready_urls[name]}/ready", running.processes[name])
        if nginx is not None:
            port = free_port()
            running.processes["nginx"] = stack.enter_context(
                nginx_proxy(nginx, port, urls["users"], Path(folder) / "nginx")
            )
            running.urls["nginx"] = f"http://127.0.0.1:{port}"
        yield running
