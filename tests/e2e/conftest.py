"""The whole stack as real processes, started from the Procfile the way ``make run`` does.

Every service gets a free port and its own fresh database (PostgreSQL when
``TEST_DATABASE_URL`` is set, else SQLite); tests talk to the gateway with httpx.
``start_stack`` is the same thing as a context manager, for suites that need a stack of their
own (the fault-injection suite stops, pauses and restarts its services).

Against a stack running elsewhere (``make e2e-compose``: the compose stack's containers), set
``E2E_GATEWAY_URL`` (and ``E2E_BOOKS_URL``, the published sandbox; ``E2E_ADMIN_EMAIL``,
``E2E_ADMIN_PASSWORD``): the ``stack`` fixture then starts nothing and its services are only
those two URLs. Tests marked ``processes`` (they stop or restart services, or reach a
service's private port) are deselected in that mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from api_shared.testing import free_port, temporary_database

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0


def procfile_commands(path: Path = REPO / "Procfile") -> dict[str, str]:
    """``name: command`` lines of the Procfile."""
    commands: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, command = line.partition(":")
            commands[name.strip()] = command.strip()
    return commands


@dataclass
class Service:
    """One Procfile entry running as a process group."""

    name: str
    command: str
    env: dict[str, str]
    port: int
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    admin_port: int | None = None  # the gateway's: /ready and /metrics are served there
    external_url: str | None = None  # a service this suite did not start (E2E_GATEWAY_URL)

    @property
    def url(self) -> str:
        return self.external_url or f"http://127.0.0.1:{self.port}"

    @property
    def admin_url(self) -> str:
        """Where /health, /ready and /metrics are: the admin port, if it has one."""
        return f"http://127.0.0.1:{self.admin_port or self.port}"

    @property
    def pid(self) -> int | None:
        """The process group's leader (the server itself: the Procfile line ``exec``s it)."""
        return self.process.pid if self.process is not None else None

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            ["/bin/sh", "-c", self.command],
            cwd=REPO,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so stop() reaches every child
        )
        log.close()

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int | None:
        """Stop the process group; SIGKILL whatever outlives the grace period."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        os.killpg(self.process.pid, sig)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGCONT)  # a paused group handles no signal
        try:
            return self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            return self.process.wait(STOP_TIMEOUT_S)

    def pause(self) -> None:
        """Freeze the process group (SIGSTOP): connections stay open, nothing is answered."""
        if self.is_running():
            assert self.process is not None
            os.killpg(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused process group run again (SIGCONT)."""
        if self.is_running():
            assert self.process is not None
            os.killpg(self.process.pid, signal.SIGCONT)

    def log_tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


@dataclass
class Stack:
    """The running platform: services by Procfile name, the gateway's URL."""

    services: dict[str, Service]
    admin_email: str
    admin_password: str

    @property
    def gateway_url(self) -> str:
        return self.services["gateway"].url

    def wait_ready(self, name: str, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Wait until a service's /ready answers 200; fail with its log otherwise."""
        service = self.services[name]
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        while time.monotonic() < deadline:
            if service.process is not None and service.process.poll() is not None:
                pytest.fail(f"{name} exited ({service.process.returncode}):\n{service.log_tail()}")
            try:
                response = httpx.get(f"{service.admin_url}/ready", timeout=2.0)
                if response.status_code == 200:
                    return
                last = f"{response.status_code} {response.text}"
            except httpx.TransportError as error:
                last = repr(error)
            time.sleep(0.2)
        pytest.fail(f"{name} not ready after {timeout_s}s ({last}):\n{service.log_tail()}")

    async def until_ready(self, name: str, timeout_s: float = READY_TIMEOUT_S) -> float:
        """``wait_ready`` without blocking the event loop; returns when (monotonic) it was."""
        service = self.services[name]
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        async with httpx.AsyncClient(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if not service.is_running():
                    pytest.fail(f"{name} is not running:\n{service.log_tail()}")
                try:
                    response = await client.get(f"{service.admin_url}/ready")
                    if response.status_code == 200:
                        return time.monotonic()
                    last = f"{response.status_code} {response.text}"
                except httpx.TransportError as error:
                    last = repr(error)
                await asyncio.sleep(0.05)
        pytest.fail(f"{name} not ready after {timeout_s}s ({last}):\n{service.log_tail()}")

    def restart(self, name: str) -> None:
        self.services[name].stop()
        self.services[name].start()
        self.wait_ready(name)


LIFTED_LIMITS = {
    "RATE_LIMIT_RPS": "100000",
    "RATE_LIMIT_BURST": "100000",
    "ADDRESS_RATE_LIMIT_RPS": "100000",
    "ADDRESS_RATE_LIMIT_BURST": "100000",
    "LOGIN_RATE_LIMIT_PER_MINUTE": "100000",
    "LOGIN_ACCOUNT_RATE_LIMIT_PER_MINUTE": "100000",
    "LOGIN_ACCOUNT_CEILING_PER_MINUTE": "100000",
    "SIGNUP_RATE_LIMIT_PER_MINUTE": "100000",
    "REFRESH_RATE_LIMIT_PER_MINUTE": "100000",
    "REFRESH_SESSION_RATE_LIMIT_PER_MINUTE": "100000",
}
"""Every gateway limit, lifted: the suites call from one address, as fast as they can."""


def _write_signing_key(path: Path) -> None:
    """A fresh Ed25519 key, as an operator would provision with openssl genpkey."""
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path.write_bytes(pem)
    path.chmod(0o600)


def _environment(ports: dict[str, int], databases: dict[str, str], var: Path) -> dict[str, str]:
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "COV_"))
    }
    # The test runner's interpreter first on PATH: the Procfile says plain `python`.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(
        {
            "APP_ENV": "development",
            "PYTHONUNBUFFERED": "1",
            "GATEWAY_PORT": str(ports["gateway"]),
            "GATEWAY_ADMIN_PORT": str(ports["gateway-admin"]),
            "USERS_PORT": str(ports["users"]),
            "ORDERS_PORT": str(ports["orders"]),
            "BOOKS_PORT": str(ports["books"]),
            "USERS_DATABASE_URL": databases["users"],
            "ORDERS_DATABASE_URL": databases["orders"],
            "BOOKS_DATABASE_URL": databases["books"],
            "USERS_SERVICE_URL": f"http://127.0.0.1:{ports['users']}",
            "ORDERS_SERVICE_URL": f"http://127.0.0.1:{ports['orders']}",
            "BOOKS_SERVICE_URL": f"http://127.0.0.1:{ports['books']}",
            "BOOKS_GRAPHQL_URL": f"http://127.0.0.1:{ports['books']}/graphql",
            "JWKS_URL": f"http://127.0.0.1:{ports['users']}/.well-known/jwks.json",
            "JWT_PRIVATE_KEY_FILE": str(var / "signing-key.pem"),
            # Every test logs in from 127.0.0.1; the limits themselves are tested in the gateway
            # (and in test_hostile_input_brute_force, by a gateway of its own).
            **LIFTED_LIMITS,
            "ADMIN_EMAIL": "admin@e2e.example.com",
            "ADMIN_PASSWORD": "e2e-admin-password",
        }
    )
    return env


@asynccontextmanager
async def start_stack(
    var: Path, env_overrides: Mapping[str, str] | None = None, users_replicas: int = 1
) -> AsyncIterator[Stack]:
    """Every Procfile service on free ports with fresh databases, files under ``var``.

    ``env_overrides`` are added to every service's environment (e.g. a shorter
    ``UPSTREAM_TIMEOUT_S``). With ``users_replicas`` > 1, users-service runs that many
    processes (``users``, ``users-2``…) on one database, all of them in ``USERS_SERVICE_URL``.
    Every process group is stopped on the way out, paused or not.
    """
    _write_signing_key(var / "signing-key.pem")
    async with AsyncExitStack() as databases_cm:
        databases = {
            name: await databases_cm.enter_async_context(temporary_database(f"e2e-{name}"))
            for name in ("users", "orders", "books")
        }
        ports = {
            name: free_port() for name in ("gateway", "gateway-admin", "users", "orders", "books")
        }
        replicas = {f"users-{n}": free_port() for n in range(2, users_replicas + 1)}
        env = _environment(ports, databases, var)
        if replicas:
            urls = [ports["users"], *replicas.values()]
            env["USERS_SERVICE_URL"] = ",".join(f"http://127.0.0.1:{port}" for port in urls)
        env |= dict(env_overrides or {})
        services = {
            name: Service(
                name,
                command,
                env,
                ports[name],
                var / f"{name}.log",
                admin_port=ports["gateway-admin"] if name == "gateway" else None,
            )
            for name, command in procfile_commands().items()
        }
        for name, port in replicas.items():
            replica_env = env | {"USERS_PORT": str(port)}
            command = services["users"].command
            services[name] = Service(name, command, replica_env, port, var / f"{name}.log")
        stack = Stack(services, env["ADMIN_EMAIL"], env["ADMIN_PASSWORD"])
        try:
            # Replicas start once the first has applied the migrations: they would race.
            for group in ([n for n in services if n not in replicas], list(replicas)):
                for name in group:
                    services[name].start()
                for name in group:
                    stack.wait_ready(name)
            yield stack
        finally:
            for service in services.values():
                service.stop()


EXTERNAL_URLS = {"gateway": "E2E_GATEWAY_URL", "books": "E2E_BOOKS_URL"}
PROCESSES_MARKER = "processes"


def external_stack() -> Stack | None:
    """The stack ``E2E_GATEWAY_URL`` names, if set: its gateway and published sandbox only."""
    if not os.environ.get(EXTERNAL_URLS["gateway"]):
        return None
    services = {
        name: Service(name, "", {}, 0, Path(os.devnull), external_url=os.environ[variable])
        for name, variable in EXTERNAL_URLS.items()
        if os.environ.get(variable)
    }
    return Stack(
        services,
        os.environ.get("E2E_ADMIN_EMAIL", "admin@example.com"),
        os.environ["E2E_ADMIN_PASSWORD"],
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{PROCESSES_MARKER}: needs the process stack (stops or restarts a service, or reaches "
        "a service's private port); deselected when E2E_GATEWAY_URL names an external stack",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not os.environ.get(EXTERNAL_URLS["gateway"]):
        return
    deselected = [item for item in items if item.get_closest_marker(PROCESSES_MARKER)]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not item.get_closest_marker(PROCESSES_MARKER)]


@pytest.fixture(scope="session")
async def stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    """Start every Procfile service on free ports; stop them all at the end of the session.

    With ``E2E_GATEWAY_URL`` set, the stack already running there instead.
    """
    external = external_stack()
    if external is not None:
        yield external
        return
    async with start_stack(tmp_path_factory.mktemp("stack")) as running:
        yield running


@pytest.fixture
async def gateway(stack: Stack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=15.0) as client:
        yield client
