"""The whole stack as real processes (api_testkit.stack), and the fixtures every e2e test uses.

Every service gets a free port and its own fresh database (PostgreSQL when
``TEST_DATABASE_URL`` is set, else SQLite); tests talk to the gateway with httpx. Suites that
need a stack of their own (the fault-injection suite stops, pauses and restarts its
services) call ``api_testkit.stack.start_stack`` themselves.

Against a stack running elsewhere (``make e2e-compose``: the compose stack's containers), set
``E2E_GATEWAY_URL`` (and ``E2E_BOOKS_URL``, the published sandbox; ``E2E_ADMIN_EMAIL``,
``E2E_ADMIN_PASSWORD``): the ``stack`` fixture then starts nothing and its services are only
those two URLs. Tests marked ``processes`` (they stop or restart services, or reach a
service's private port) are deselected in that mode.

Mixed releases (``make e2e-mixed``): ``smoke`` marks the representative subset each
combination runs; ``needs(users_service="1.0.0")`` marks a test only that release (or a later
one) passes. It is deselected when ``E2E_VERSION_USERS_SERVICE`` (the running release, set by
deploy/mixed-versions.sh) is older; without that variable every service is this checkout's.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from packaging.version import Version

from api_testkit.actors import Actors, cast
from api_testkit.stack import EXTERNAL_URLS, Stack, external_stack, start_stack

PROCESSES_MARKER = "processes"
SMOKE_MARKER = "smoke"
NEEDS_MARKER = "needs"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{PROCESSES_MARKER}: needs the process stack (stops or restarts a service, or reaches "
        "a service's private port); deselected when E2E_GATEWAY_URL names an external stack",
    )
    config.addinivalue_line(
        "markers",
        f"{SMOKE_MARKER}: the representative subset each mixed-release combination runs",
    )
    config.addinivalue_line(
        "markers",
        f"{NEEDS_MARKER}(users_service='1.0.0', ...): passes only from that release of the "
        "service on; deselected when E2E_VERSION_<SERVICE> names an older one",
    )


def running_version(service: str) -> Version | None:
    """The release of ``service`` (``users_service``) the stack runs; None: this checkout's."""
    value = os.environ.get(f"E2E_VERSION_{service.upper()}")
    return Version(value) if value else None


def needs_newer(item: pytest.Item) -> bool:
    """True when a service runs an older release than the test's ``needs`` marker asks for."""
    for marker in item.iter_markers(NEEDS_MARKER):
        for service, needed in marker.kwargs.items():
            running = running_version(service)
            if running is not None and running < Version(needed):
                return True
    return False


def _deselect(config: pytest.Config, items: list[pytest.Item], drop: list[pytest.Item]) -> None:
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [item for item in items if item not in drop]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _deselect(config, items, [item for item in items if needs_newer(item)])
    if os.environ.get(EXTERNAL_URLS["gateway"]):
        _deselect(
            config, items, [item for item in items if item.get_closest_marker(PROCESSES_MARKER)]
        )


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


@pytest.fixture(scope="module")
def signing_key(stack: Stack) -> Ed25519PrivateKey:
    """users-service's own key, from the file the stack provisioned for it."""
    pem = Path(stack.services["users"].env["JWT_PRIVATE_KEY_FILE"]).read_bytes()
    private = serialization.load_pem_private_key(pem, password=None)
    assert isinstance(private, Ed25519PrivateKey)
    return private


@pytest.fixture
async def gateway(stack: Stack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=15.0) as client:
        yield client


@pytest.fixture(scope="module")
async def actors(stack: Stack) -> Actors:
    """A customer with one order, and the admin: made once per module."""
    return await cast(stack)


@pytest.fixture
async def every_service_survives(stack: Stack) -> AsyncIterator[None]:
    """After the test: every service is the same process as before, alive and healthy.

    The hostile-input modules apply it to each of their tests (``usefixtures``).
    """
    pids = {
        name: service.process.pid for name, service in stack.services.items() if service.process
    }
    yield
    async with httpx.AsyncClient(timeout=5.0) as client:
        for name, service in stack.services.items():
            if name in pids:  # a process this suite started (an external stack has none)
                assert service.process is not None
                assert service.process.poll() is None, f"{name} died:\n{service.log_tail()}"
                assert service.process.pid == pids[name], f"{name} was restarted"
            assert (await client.get(f"{service.url}/health")).status_code == 200, name
