"""The compose stack that ``make e2e-compose`` started, driven through the Docker SDK.

This suite needs that running stack: ``deploy/e2e-compose.sh`` sets ``E2E_COMPOSE_PROJECT``,
``E2E_COMPOSE_ENV_FILE``, ``E2E_GATEWAY_URL`` and the admin's credentials. A failing test gets
the tail of every container's log attached to its report.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest
from docker.models.containers import Container
from docker.models.images import Image

NEEDED = ("E2E_COMPOSE_PROJECT", "E2E_COMPOSE_ENV_FILE", "E2E_GATEWAY_URL", "E2E_ADMIN_PASSWORD")
# The REST services and the catalog: the members whose images this checkout builds.
APP_SERVICES = ("gateway", "users-service", "orders-service", "books-graphql", "webhooks-service")
LOG_LINES = 60


@dataclass(frozen=True)
class ComposeStack:
    """One compose project: its containers by service, its env file, its gateway."""

    client: docker.DockerClient
    project: str
    env_file: Path
    gateway_url: str
    admin_email: str
    admin_password: str

    def containers(self, service: str, *, stopped: bool = False) -> list[Container]:
        labels = [f"com.docker.compose.project={self.project}"]
        labels.append(f"com.docker.compose.service={service}")
        found: list[Container] = self.client.containers.list(all=stopped, filters={"label": labels})
        return sorted(found, key=lambda c: c.name or "")

    def container(self, service: str) -> Container:
        found = self.containers(service, stopped=True)
        assert found, f"no container of {service} in {self.project}"
        return found[0]

    def image_of(self, service: str) -> Image:
        image = self.container(service).image
        assert image is not None, f"the container of {service} has no image"
        return image

    def every_container(self) -> list[Container]:
        found: list[Container] = self.client.containers.list(
            all=True, filters={"label": [f"com.docker.compose.project={self.project}"]}
        )
        return sorted(found, key=lambda c: c.name or "")

    def wait_healthy(self, container: Container, timeout_s: float = 90.0) -> float:
        """Until Docker calls the container healthy; returns when (monotonic) it was."""
        deadline = time.monotonic() + timeout_s
        state: dict[str, object] = {}
        while time.monotonic() < deadline:
            container.reload()
            state = container.attrs["State"]
            health = state.get("Health") or {}
            if isinstance(health, dict) and health.get("Status") == "healthy":
                return time.monotonic()
            time.sleep(0.25)
        raise AssertionError(f"{container.name} not healthy after {timeout_s}s: {state}")

    def logs(self) -> str:
        parts = []
        for container in self.every_container():
            tail = container.logs(tail=LOG_LINES).decode(errors="replace")
            parts.append(f"--- {container.name} ({container.status})\n{tail}")
        return "\n".join(parts)


@pytest.fixture(scope="session")
def compose_stack() -> Iterator[ComposeStack]:
    missing = [name for name in NEEDED if not os.environ.get(name)]
    if missing:
        pytest.fail(f"tests/compose runs against `make e2e-compose`'s stack: set {missing}")
    client = docker.from_env()
    yield ComposeStack(
        client,
        os.environ["E2E_COMPOSE_PROJECT"],
        Path(os.environ["E2E_COMPOSE_ENV_FILE"]),
        os.environ["E2E_GATEWAY_URL"],
        os.environ.get("E2E_ADMIN_EMAIL", "admin@example.com"),
        os.environ["E2E_ADMIN_PASSWORD"],
    )
    client.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failing test's report gets the tail of every container's log."""
    report = yield
    stack = getattr(item, "funcargs", {}).get("compose_stack")
    if report.failed and isinstance(stack, ComposeStack):
        report.sections.append(("container logs", stack.logs()))
    return report
