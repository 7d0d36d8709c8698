"""The dispatcher's world as real parts: nats-server, the API and the dispatcher as processes,
a real database, and a webhook receiver run by the tests (a real HTTP server on 127.0.0.1).

``webhooks_stack`` starts them once for a module: the test kit's nats-server with JetStream
in a temporary store and the deployments' NATS users, the ORDERS and USERS streams as the
services make them (each event is published as its service's NATS user, as its relay does),
a fresh database migrated by ``python -m webhooks_service migrate``, then ``serve`` and
``dispatch`` (the dispatcher as its own NATS user) with WEBHOOK_ALLOW_PRIVATE=1 (the
receiver is on loopback), a retry schedule of fractions of a second and a secrets key file of
its own. The API process verifies tokens with the keys of the session's users-service (a
real process, tests/conftest.py) and asks it about its callers' standing; the stack's
admin is users-service's. users-service's own events are off there: the tests publish
theirs on the USERS stream as its relay does, to stage each change exactly once.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest
from nats.js import JetStreamContext

from api_devservers.nats_server import NatsServer
from api_shared.events import streams
from api_shared.events.access import ORDERS_SERVICE, USERS_SERVICE, WEBHOOKS_DISPATCHER
from api_testkit.actors import admin_caller
from api_testkit.databases import temporary_database
from api_testkit.events import cloud_event_document, nats_client, running_nats_server
from api_testkit.neighbours import UsersService
from api_testkit.ports import free_port
from api_testkit.processes import Service
from api_testkit.webhooks import WebhookReceiver, webhook_receiver
from webhooks_service.secret_box import new_key

WAIT_TIMEOUT_S = 30.0
RETRY_DELAYS = "0.3,0.3"  # three attempts, then failed


@dataclass
class WebhooksStack:
    api: httpx.AsyncClient
    receiver: WebhookReceiver
    publishers: dict[str, JetStreamContext]  # by service (orders, users): as its NATS user
    admin: dict[str, str]
    dispatcher_url: str  # its /health, /ready and /metrics

    async def register(
        self, name: str, event_types: list[str], admin: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """An endpoint for the receiver's ``name``, registered by ``admin`` (the stack's)."""
        response = await self.api.post(
            "/api/webhooks",
            json={"url": self.receiver.url(name), "eventTypes": event_types},
            headers=admin or self.admin,
        )
        assert response.status_code == 201, response.text
        endpoint: dict[str, Any] = response.json()["data"]
        return endpoint

    async def publish(self, event_type: str, subject: str, data: dict[str, Any]) -> dict[str, Any]:
        """Publish a CloudEvent as the relay does; returns the document."""
        document = cloud_event_document(event_type, subject, data)
        await self.publish_document(document)
        return document

    async def publish_document(self, document: dict[str, Any], msg_id: str | None = None) -> None:
        service, _, rest = document["type"].partition(".")
        await self.publishers[service].publish(
            f"{service}.events.{rest}",
            orjson.dumps(document),
            headers={"Nats-Msg-Id": msg_id or document["id"]},
        )

    async def endpoint(self, endpoint_id: str) -> dict[str, Any]:
        response = await self.api.get(f"/api/webhooks/{endpoint_id}", headers=self.admin)
        assert response.status_code == 200, response.text
        found: dict[str, Any] = response.json()["data"]
        return found

    async def deliveries(self, endpoint_id: str, **params: Any) -> list[dict[str, Any]]:
        response = await self.api.get(
            f"/api/webhooks/{endpoint_id}/deliveries", params=params, headers=self.admin
        )
        assert response.status_code == 200, response.text
        items: list[dict[str, Any]] = response.json()["data"]
        return items

    async def wait_for_status(self, endpoint_id: str, status: str) -> dict[str, Any]:
        """The endpoint's only delivery, once it has ``status``."""
        (only,) = await self.wait_for_all(endpoint_id, 1, status)
        return only

    async def wait_for_all(
        self, endpoint_id: str, count: int, status: str, sort: str = "createdAt"
    ) -> list[dict[str, Any]]:
        """The endpoint's ``count`` deliveries, once each has ``status``: a receiver holds a
        POST before the dispatcher has recorded its answer."""
        deadline = time.monotonic() + WAIT_TIMEOUT_S
        while True:
            items = await self.deliveries(endpoint_id, sort=sort)
            if len(items) == count and all(item["status"] == status for item in items):
                return items
            assert time.monotonic() < deadline, items
            await asyncio.sleep(0.1)


@pytest.fixture(scope="module")
def processes() -> Iterator[list[Service]]:
    """The stack's processes, stopped in reverse order whatever happens."""
    started: list[Service] = []
    yield started
    for service in reversed(started):
        service.stop()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    with running_nats_server(tmp_path_factory.mktemp("nats")) as server:
        yield server


@pytest.fixture(scope="module")
async def webhooks_stack(
    tmp_path_factory: pytest.TempPathFactory,
    users_service: UsersService,
    users_api: httpx.AsyncClient,
    processes: list[Service],
    broker: NatsServer,
) -> AsyncIterator[WebhooksStack]:
    folder = tmp_path_factory.mktemp("webhooks-stack")

    async with (
        webhook_receiver() as receiver,
        nats_client(broker.login(ORDERS_SERVICE.name)) as orders,
        nats_client(broker.login(USERS_SERVICE.name)) as users,
    ):
        publishers = {"orders": orders.jetstream(), "users": users.jetstream()}
        await streams.ensure_stream(publishers["orders"], streams.ORDERS)
        await streams.ensure_stream(publishers["users"], streams.USERS)

        api_port, dispatcher_port = free_port(), free_port()
        key_file = folder / "webhook-secrets.key"  # provisioned as an operator would
        key_file.write_bytes(new_key() + b"\n")
        async with temporary_database("webhooks-dispatch") as database_url:
            env = {
                **os.environ,
                "WEBHOOKS_DATABASE_URL": database_url,
                "WEBHOOKS_PORT": str(api_port),
                "WEBHOOKS_DISPATCHER_PORT": str(dispatcher_port),
                "NATS_URL": broker.url,
                "NATS_NKEY_SEED_FILE": str(broker.login(WEBHOOKS_DISPATCHER.name).seed_file),
                "WEBHOOK_ALLOW_PRIVATE": "1",
                "WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",  # deliveries go nowhere else
                "WEBHOOK_RETRY_DELAYS_S": RETRY_DELAYS,
                "WEBHOOK_POLL_INTERVAL_S": "0.1",
                "JWKS_URL": users_service.jwks_url,
                "USERS_SERVICE_URL": users_service.url,
                "WEBHOOK_SECRETS_KEY_FILE": str(key_file),
            }
            module = [sys.executable, "-m", "webhooks_service"]
            migrate = await asyncio.create_subprocess_exec(
                *module, "migrate", env=env, stderr=asyncio.subprocess.PIPE
            )
            _, errors = await migrate.communicate()
            assert migrate.returncode == 0, errors.decode()
            served = [
                Service(name, [*module, command], env, folder / f"{name}.log", port)
                for name, command, port in (
                    ("api", "serve", api_port),
                    ("dispatcher", "dispatch", dispatcher_port),
                )
            ]
            for service in served:
                processes.append(service)
                service.start()
                await service.until_ready()
            admin = (
                await admin_caller(
                    users_api, users_service.admin_email, users_service.admin_password
                )
            ).headers
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{api_port}") as api:
                yield WebhooksStack(
                    api, receiver, publishers, admin, f"http://127.0.0.1:{dispatcher_port}"
                )
            for service in served:  # before their database goes
                service.stop()
