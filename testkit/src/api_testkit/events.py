"""Test support for events: a real nats-server per test, and reading a stream back whole."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import nats
from nats.js.errors import NotFoundError

from api_shared.events.envelope import CloudEvent
from api_shared.events.server import NatsServer

from .ports import free_port

WAIT_TIMEOUT_S = 30.0


@contextmanager
def running_nats_server(store_dir: Path) -> Iterator[NatsServer]:
    """A nats-server with JetStream on a free port, killed afterwards."""
    server = NatsServer(free_port(), store_dir)
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


async def read_stream(url: str, stream: str) -> list[StoredMessage]:
    """Every message of ``stream``, in stream order (empty when the stream does not exist)."""
    client = await nats.connect(url, connect_timeout=2, max_reconnect_attempts=0)
    try:
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
    finally:
        await client.close()


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
