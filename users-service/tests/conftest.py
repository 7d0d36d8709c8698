"""Fixtures chain: keys → settings → app → running server → HTTP client, on a real database.

Argon2 runs with cheap parameters here (ARGON2_* settings); production keeps the strong ones.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pydantic import SecretStr
from sanic import Sanic

from api_testkit.actors import access_token
from api_testkit.databases import migrated_settings, temporary_database
from api_testkit.in_process import serve_in_process
from api_testkit.ports import free_port
from api_testkit.readiness import until_ready
from users_service.app import create_app
from users_service.database import database_config
from users_service.settings import Settings

ADMIN_EMAIL = "root@example.com"
ADMIN_PASSWORD = "root-password-for-tests"


class Argon2Cost(TypedDict):
    argon2_time_cost: int
    argon2_memory_kib: int
    argon2_parallelism: int


CHEAP_ARGON2: Argon2Cost = {"argon2_time_cost": 1, "argon2_memory_kib": 8, "argon2_parallelism": 1}


class Budgets(TypedDict):
    login_account_rate_limit_per_minute: int
    refresh_session_rate_limit_per_minute: int
    credential_change_rate_limit_per_minute: int
    current_password_failure_limit: int


# The budgets of users_service.budgets out of the way of tests about other things; the tests
# of the budgets (test_credential_limits.py) serve an app of their own with low ones.
LIFTED_BUDGETS: Budgets = {
    "login_account_rate_limit_per_minute": 1_000_000,
    "refresh_session_rate_limit_per_minute": 1_000_000,
    "credential_change_rate_limit_per_minute": 1_000_000,
    "current_password_failure_limit": 1_000_000,
}


@dataclass(frozen=True)
class ServiceKeys:
    """The service's current signing key and a retired one it still publishes."""

    current: Ed25519PrivateKey
    current_file: Path
    retired: Ed25519PrivateKey
    retired_public_file: Path


@pytest.fixture(scope="session")
def service_keys(tmp_path_factory: pytest.TempPathFactory) -> ServiceKeys:
    folder = tmp_path_factory.mktemp("keys")
    current, retired = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    current_file, retired_file = folder / "current.pem", folder / "retired.pub.pem"
    current_file.write_bytes(
        current.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    retired_file.write_bytes(
        retired.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return ServiceKeys(current, current_file, retired, retired_file)


@pytest.fixture(scope="session")
async def settings(service_keys: ServiceKeys) -> AsyncIterator[Settings]:
    def on(url: str) -> Settings:
        return Settings(
            database_url=url,
            environment="development",
            jwt_private_key_file=service_keys.current_file,
            jwt_public_key_files=(service_keys.retired_public_file,),
            admin_email=ADMIN_EMAIL,
            admin_password=SecretStr(ADMIN_PASSWORD),
            **CHEAP_ARGON2,
            **LIFTED_BUDGETS,
        )

    async with migrated_settings("users", on, database_config) as settings:
        yield settings


@pytest.fixture(scope="session")
async def base_url(settings: Settings) -> AsyncIterator[str]:
    Sanic.test_mode = True
    async with serve_in_process(create_app(settings)) as url:
        yield url


@dataclass(frozen=True)
class Account:
    """A user created through the API, with a token obtained by logging in."""

    id: str
    email: str
    password: str
    role: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
async def admin(client: httpx.AsyncClient) -> Account:
    """The admin that the service ensured at start-up from ADMIN_EMAIL/ADMIN_PASSWORD."""
    token = await access_token(client, ADMIN_EMAIL, ADMIN_PASSWORD)
    subject: str = jwt.decode(token, options={"verify_signature": False})["sub"]
    return Account(subject, ADMIN_EMAIL, ADMIN_PASSWORD, "admin", token)


NewAccount = Callable[..., Awaitable[Account]]


@pytest.fixture
def new_account(client: httpx.AsyncClient, admin: Account) -> NewAccount:
    """Sign up a user (admins through the admin) and log in as them."""

    async def create(role: str = "customer", name: str = "Test User") -> Account:
        email = f"{role}-{uuid.uuid4().hex[:10]}@example.com"
        password = f"password-{uuid.uuid4().hex[:8]}"
        body = {"name": name, "email": email, "password": password, "role": role}
        headers = admin.headers if role == "admin" else {}
        response = await client.post("/api/users", json=body, headers=headers)
        assert response.status_code == 201, response.text
        token = await access_token(client, email, password)
        return Account(response.json()["data"]["id"], email, password, role, token)

    return create


# --- users-service as a child process: for attacks measured on a process of its own --------


@dataclass
class ServiceProcess:
    """``python -m users_service`` running in a child process; its output in two files."""

    process: subprocess.Popen[bytes]
    url: str
    stdout: Path
    stderr: Path

    def status(self, field: str) -> int:
        """A ``VmRSS``-like line of /proc/<pid>/status, in KiB (VmHWM is the peak RSS)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name == field:
                return int(value.split()[0])
        raise KeyError(field)

    def exited(self) -> str | None:
        """None while it runs; else what it wrote on its standard error."""
        if self.process.poll() is None:
            return None
        return f"users-service exited ({self.process.returncode}):\n{self.stderr.read_text()}"

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(PROCESS_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.wait(PROCESS_STOP_TIMEOUT_S)


PROCESS_READY_TIMEOUT_S = 60.0
PROCESS_STOP_TIMEOUT_S = 10.0


@dataclass
class ProcessLauncher:
    """Starts users-service processes on one database; every one is stopped at teardown."""

    database_url: str
    keys: ServiceKeys
    logs: Path
    started: list[ServiceProcess]

    def start(self, **overrides: str | None) -> ServiceProcess:
        """A new process (not waited for): development, cheap Argon2, ``overrides`` on top
        (None: the variable unset)."""
        port = free_port()
        env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
        env.update(
            {
                "APP_ENV": "development",
                "HOST": "127.0.0.1",
                "USERS_PORT": str(port),
                "USERS_DATABASE_URL": self.database_url,
                "JWT_PRIVATE_KEY_FILE": str(self.keys.current_file),
                "ADMIN_EMAIL": ADMIN_EMAIL,
                "ADMIN_PASSWORD": ADMIN_PASSWORD,
                "ARGON2_TIME_COST": "1",
                "ARGON2_MEMORY_KIB": "8",
                "ARGON2_PARALLELISM": "1",
                "LOG_LEVEL": "INFO",
                "PYTHONUNBUFFERED": "1",
            }
        )
        for name, value in overrides.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        logs = self.logs / f"process-{len(self.started)}"
        logs.mkdir(parents=True)
        stdout, stderr = logs / "stdout.log", logs / "stderr.log"
        with stdout.open("wb") as out, stderr.open("wb") as err:
            process = subprocess.Popen(
                [sys.executable, "-m", "users_service"], env=env, stdout=out, stderr=err
            )
        service = ServiceProcess(process, f"http://127.0.0.1:{port}", stdout, stderr)
        self.started.append(service)
        return service

    @asynccontextmanager
    async def running(self, **overrides: str | None) -> AsyncIterator[ServiceProcess]:
        """A started process once /ready answers 200; stopped on the way out."""
        service = self.start(**overrides)
        try:
            await until_ready(
                f"{service.url}/ready", service.exited, timeout_s=PROCESS_READY_TIMEOUT_S
            )
            yield service
        finally:
            service.stop()


@pytest.fixture(scope="module")
async def process_database() -> AsyncIterator[str]:
    """A fresh, migrated database for the module's child processes (not this session's)."""
    async with temporary_database("users-process") as url:
        migrate = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "users_service",
            "migrate",
            env=dict(os.environ, USERS_DATABASE_URL=url, LOG_LEVEL="WARNING"),
        )
        assert await asyncio.wait_for(migrate.wait(), timeout=120) == 0
        yield url


@pytest.fixture
def launcher(
    process_database: str, service_keys: ServiceKeys, tmp_path: Path
) -> Iterator[ProcessLauncher]:
    launcher = ProcessLauncher(process_database, service_keys, tmp_path, [])
    yield launcher
    for service in launcher.started:
        service.stop()


@pytest.fixture(scope="module")
def module_launcher(
    process_database: str, service_keys: ServiceKeys, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ProcessLauncher]:
    """As ``launcher``, for processes a whole module shares."""
    launcher = ProcessLauncher(
        process_database, service_keys, tmp_path_factory.mktemp("processes"), []
    )
    yield launcher
    for service in launcher.started:
        service.stop()
