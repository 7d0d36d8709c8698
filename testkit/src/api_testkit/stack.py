"""The whole platform as real processes, started from the Procfile the way ``make run`` does.

Every service gets a free port and its own fresh database (``databases``); ``start_stack``
stops every process group on the way out, paused or not. ``external_stack`` stands for a
stack running elsewhere (``E2E_GATEWAY_URL``: the compose stack's containers), of which only
the gateway and the published sandbox are known.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from api_devservers.nats_server import listening
from api_shared.events.access import INSPECTOR
from api_shared.events.credentials import NatsLogin, seed_file

from .databases import temporary_database
from .environment import (
    addresses,
    development_environment,
    mail_addresses,
    webhooks_addresses,
    write_signing_key,
)
from .paths import REPO
from .ports import free_port
from .processes import Service, shell
from .readiness import READY_TIMEOUT_S

ADMIN_EMAIL = "admin@e2e.example.com"
ADMIN_PASSWORD = "e2e-admin-password"
EXTERNAL_URLS = {"gateway": "E2E_GATEWAY_URL", "books": "E2E_BOOKS_URL"}
STANDING_CACHE_S = 5.0  # api_shared.standing's default
DATABASES = ("users", "orders", "books", "webhooks")
PORTS = (
    *("gateway", "gateway-admin", "users", "orders", "books"),
    *("webhooks", "dispatcher", "nats", "mail", "mail-smtp"),
)
BROKER = "nats"
"""The Procfile's nats-server: no HTTP, so not among ``Stack.services``."""
MAIL = "mail"
"""The Procfile's mail catcher: a stand-in for the operator's mail server, not a service of the
platform (no contract, no JSON logs), so not among ``Stack.services`` either."""
ANNOUNCER = "ready"
"""The Procfile's line that tells a person the stack is ready: not a server, not started here."""


def procfile_commands(path: Path = REPO / "Procfile") -> dict[str, str]:
    """``name: command`` lines of the Procfile."""
    commands: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, command = line.partition(":")
            commands[name.strip()] = command.strip()
    return commands


def procfile_service(
    name: str,
    command: str,
    env: Mapping[str, str],
    var: Path,
    port: int,
    admin_port: int | None = None,
) -> Service:
    """The Procfile's line ``name: command`` as a ``Service`` on ``port``, logging under ``var``."""
    return Service(name, shell(command), env, var / f"{name}.log", port, admin_port=admin_port)


@dataclass
class Stack:
    """The running platform: services by Procfile name, the admin's credentials."""

    services: dict[str, Service]
    admin_email: str
    admin_password: str
    broker: Service | None = None  # the nats-server; None on an external stack
    nats_keys_dir: Path | None = None  # where the nats-server keeps its users' seeds
    mail: Service | None = None  # the mail catcher users-service sends to; None if external

    @property
    def standing_cache_s(self) -> float:
        """The longest any service keeps users-service's answer about a caller
        (``STANDING_CACHE_S``; its documented default, 5 s, where none sets it): how long a
        test waits for a revocation or a suspension to reach every service."""
        configured = [
            float(service.env["STANDING_CACHE_S"])
            for service in self.services.values()
            if service.env.get("STANDING_CACHE_S")
        ]
        return max(configured, default=STANDING_CACHE_S)

    @property
    def mail_url(self) -> str:
        """The catcher's HTTP API (Mailpit's routes)."""
        assert self.mail is not None, "an external stack's mail catcher is not reachable"
        return self.mail.url

    @property
    def nats_url(self) -> str:
        assert self.broker is not None, "an external stack's NATS is not reachable from here"
        return f"nats://127.0.0.1:{self.broker.port}"

    def nats_login(self, user: str = INSPECTOR.name) -> NatsLogin:
        """How NATS user ``user`` (by default the read-only inspector) connects to it."""
        assert self.nats_keys_dir is not None, "an external stack's NATS users are unknown"
        return NatsLogin(self.nats_url, user, seed_file(self.nats_keys_dir, user))

    def wait_broker(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Block until the nats-server accepts connections; fail with its log otherwise."""
        assert self.broker is not None
        deadline = time.monotonic() + timeout_s
        while not listening(self.broker.port):
            if not self.broker.is_running() or time.monotonic() > deadline:
                raise AssertionError(f"nats-server did not start:\n{self.broker.log_tail()}")
            time.sleep(0.05)

    @property
    def gateway_url(self) -> str:
        return self.services["gateway"].url

    def wait_ready(self, name: str, timeout_s: float = READY_TIMEOUT_S) -> float:
        """Block until a service's /ready answers 200; fail with its log otherwise."""
        return self.services[name].wait_ready(timeout_s=timeout_s)

    async def until_ready(self, name: str, timeout_s: float = READY_TIMEOUT_S) -> float:
        """``wait_ready`` without blocking the event loop; returns when (monotonic) it was."""
        return await self.services[name].until_ready(timeout_s=timeout_s)

    def restart(self, name: str) -> None:
        self.services[name].stop()
        self.services[name].start()
        self.wait_ready(name)


@asynccontextmanager
async def start_stack(
    var: Path, env_overrides: Mapping[str, str] | None = None, users_replicas: int = 1
) -> AsyncIterator[Stack]:
    """Every Procfile service on free ports with fresh databases, files under ``var``.

    ``env_overrides`` are added to every service's environment (e.g. a shorter
    ``UPSTREAM_TIMEOUT_S``). With ``users_replicas`` > 1, users-service runs that many
    processes (``users``, ``users-2``…) on one database, all of them in ``USERS_SERVICE_URL``.
    """
    key_file = write_signing_key(var / "signing-key.pem")
    async with AsyncExitStack() as databases_cm:
        databases = {
            name: await databases_cm.enter_async_context(temporary_database(f"e2e-{name}"))
            for name in DATABASES
        }
        ports = {name: free_port() for name in PORTS}
        replicas = {f"users-{n}": free_port() for n in range(2, users_replicas + 1)}
        env = development_environment(key_file, ADMIN_EMAIL, ADMIN_PASSWORD)
        env |= addresses(ports, databases) | webhooks_addresses(ports, databases)
        env |= mail_addresses(ports["mail"], ports["mail-smtp"])
        # The Procfile's own nats-server, where the services look for it (NATS_URL unset),
        # and its users' seeds, where each process finds its own (NATS_NKEY_SEED_FILE unset).
        for name in ("NATS_URL", "NATS_NKEY_SEED_FILE"):
            env.pop(name, None)
        keys_dir = var / "nats-keys"
        env |= {
            "NATS_PORT": str(ports[BROKER]),
            "NATS_STORE_DIR": str(var / "nats"),
            "NATS_KEYS_DIR": str(keys_dir),
        }
        if replicas:
            urls = [ports["users"], *replicas.values()]
            env["USERS_SERVICE_URL"] = ",".join(f"http://127.0.0.1:{port}" for port in urls)
        env |= dict(env_overrides or {})
        commands = procfile_commands()
        del commands[ANNOUNCER]
        broker = procfile_service(BROKER, commands.pop(BROKER), env, var, ports[BROKER])
        mail = procfile_service(MAIL, commands.pop(MAIL), env, var, ports[MAIL])
        services = {
            name: procfile_service(
                name,
                command,
                env,
                var,
                ports[name],
                admin_port=ports["gateway-admin"] if name == "gateway" else None,
            )
            for name, command in commands.items()
        }
        for name, port in replicas.items():
            replica_env = env | {"USERS_PORT": str(port)}
            command = services["users"].command
            services[name] = Service(name, command, replica_env, var / f"{name}.log", port)
        stack = Stack(services, ADMIN_EMAIL, ADMIN_PASSWORD, broker, keys_dir, mail)
        try:
            broker.start()
            mail.start()
            stack.wait_broker()
            mail.wait_ready()
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
            mail.stop()
            broker.stop()


def external_stack() -> Stack | None:
    """The stack ``E2E_GATEWAY_URL`` names, if set: its gateway and published sandbox only."""
    if not os.environ.get(EXTERNAL_URLS["gateway"]):
        return None
    services = {
        name: Service(name, (), {}, Path(os.devnull), external_url=os.environ[variable])
        for name, variable in EXTERNAL_URLS.items()
        if os.environ.get(variable)
    }
    return Stack(
        services,
        os.environ.get("E2E_ADMIN_EMAIL", "admin@example.com"),
        os.environ["E2E_ADMIN_PASSWORD"],
    )
