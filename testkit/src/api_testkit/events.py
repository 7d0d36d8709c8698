"""Test support for events: a real nats-server per test (with the deployments' users and
permissions), connecting as one of its users, and reading a stream back whole."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nats
from nats.aio.client import Client
from nats.js.errors import NotFoundError

from api_devservers.nats_server import NatsServer
from api_shared.events.access import INSPECTOR, inbox_of
from api_shared.events.credentials import NatsLogin, read_seed
from api_shared.events.envelope import CloudEvent

from .ports import free_port

WAIT_TIMEOUT_S = 30.0


def cloud_event_document(
    event_type: str, subject: str, data: dict[str, Any], *, at: datetime | None = None
) -> dict[str, Any]:
    """A new event as its publisher writes it (``orders.order.created``: orders-service's)."""
    return {
        "specversion": "1.0",
        "id": str(uuid.uuid4()),
        "source": f"/{event_type.split('.')[0]}-service",
        "type": event_type,
        "subject": subject,
        "time": (at or datetime.now(UTC)).isoformat().replace("+00:00", "Z"),
        "datacontenttype": "application/json",
        "data": data,
    }


@contextmanager
def running_nats_server(folder: Path) -> Iterator[NatsServer]:
    """A nats-server with JetStream on a free port, its store and its users' seeds in
    ``folder``, killed afterwards."""
    server = NatsServer(free_port(), folder / "store", folder / "keys")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """One message as the stream holds it."""

    subject: str
    message_id: str | None
    event: CloudEvent


async def _ignore(error: Exception) -> None:
    """The default ``on_error``: a test that expects refusals passes its own listener."""


@asynccontextmanager
async def nats_client(
    login: NatsLogin, on_error: Callable[[Exception], Awaitable[None]] = _ignore
) -> AsyncIterator[Client]:
    """A connection as ``login``'s user, made as the services make theirs (its seed, its
    inbox); ``on_error`` hears what the server refuses. Closed afterwards."""
    client = await nats.connect(
        login.url,
        name=login.user,
        nkeys_seed_str=read_seed(login.seed_file),
        inbox_prefix=inbox_of(login.user),
        connect_timeout=2,
        allow_reconnect=False,  # a refused connection raises at once (nats-py would retry)
        error_cb=on_error,
    )
    try:
        yield client
    finally:
        await client.close()


def inspector(server: NatsServer) -> NatsLogin:
    """The development user that reads streams and changes nothing (``access.INSPECTOR``)."""
    return server.login(INSPECTOR.name)


async def read_stream(login: NatsLogin, stream: str) -> list[StoredMessage]:
    """Every message of ``stream``, in stream order (empty when the stream does not exist),
    read as ``login``'s user (``inspector``, say)."""
    async with nats_client(login) as client:
        js = client.jetstream()
        try:
            info = await js.stream_info(stream)
        except NotFoundError:
            return []
        messages = []
        for sequence in range(info.state.first_seq, info.state.last_seq + 1):
            raw = await js.get_msg(stream, sequence)
            assert raw.data is not None
            messages.append(
                StoredMessage(
                    subject=raw.subject or "",
                    message_id=(raw.headers or {}).get("Nats-Msg-Id"),
                    event=CloudEvent.from_json(raw.data),
                )
            )
        return messages


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Wait until ``check()`` is true; fail naming ``what`` after a generous timeout.

    A check that raises counts as not yet (a server just started may not answer JetStream
    requests at once); the last error is named if the time runs out.
    """
    deadline = time.monotonic() + WAIT_TIMEOUT_S
    last_error: Exception | None = None
    while True:
        try:
            if await check():
                return
        except Exception as error:
            last_error = error
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what} (last error: {last_error!r})")
        await asyncio.sleep(0.05)
