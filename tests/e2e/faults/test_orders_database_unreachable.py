"""orders-service's database unreachable: only orders suffer, and the gateway stays ready.

orders-service reaches its PostgreSQL database through a TCP relay this test owns; closing the
relay makes the database unreachable for it (the shared server itself is never touched).
``/orders`` answers 503 with Retry-After; users, logins and GraphQL keep answering; the
gateway's ``/ready`` stays 200 while its ``/status`` shows orders unavailable. SQLite has no
server to be cut off from: this module is collected only when ``TEST_DATABASE_URL`` names a
PostgreSQL server (see conftest.py).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from api_testkit.actors import access_token, customer
from api_testkit.catalog import book_ids
from api_testkit.databases import temporary_database
from api_testkit.ports import free_port
from api_testkit.stack import Stack, start_stack


class Relay:
    """A TCP relay to the database, in a thread of its own (the stack's helpers block).

    ``cut()`` closes the listener and every relayed connection: the database is unreachable
    for whoever connects through the relay, as if its host were gone.
    """

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        self.server: asyncio.Server | None = None
        self.writers: set[asyncio.StreamWriter] = set()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    @contextmanager
    def running(self) -> Iterator[Relay]:
        self.thread.start()
        self._call(self._listen())
        try:
            yield self
        finally:
            self.cut()
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)

    def cut(self) -> None:
        self._call(self._cut())

    def _call(self, coroutine: Coroutine[Any, Any, None]) -> None:
        asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(10)

    async def _listen(self) -> None:
        self.server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)

    async def _cut(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
        for writer in list(self.writers):
            writer.transport.abort()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self.writers |= {writer, up_writer}
        await asyncio.gather(
            _pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True
        )
        self.writers -= {writer, up_writer}


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        writer.transport.abort()


def _through(relay: Relay, url: str) -> str:
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@127.0.0.1:{relay.port}" if credentials else f"127.0.0.1:{relay.port}"
    return urlunsplit(parts._replace(netloc=netloc))


@asynccontextmanager
async def orders_behind_a_relay(var: Path) -> AsyncIterator[tuple[Stack, Relay]]:
    async with temporary_database("e2e-orders-relayed") as url:
        parts = urlsplit(url)
        relay = Relay(parts.hostname or "127.0.0.1", parts.port or 5432)
        with relay.running():
            overrides = {"ORDERS_DATABASE_URL": _through(relay, url)}
            async with start_stack(var, overrides) as stack:
                yield stack, relay


async def test_orders_database_unreachable_costs_only_orders(tmp_path: Path) -> None:
    async with (
        orders_behind_a_relay(tmp_path) as (stack, relay),
        httpx.AsyncClient(base_url=stack.gateway_url, timeout=15.0) as gateway,
        httpx.AsyncClient(base_url=stack.services["gateway"].admin_url, timeout=15.0) as admin,
    ):
        me, headers = await customer(gateway)
        before = await gateway.get("/orders", headers=headers)
        relay.cut()
        orders = [await gateway.get("/orders", headers=headers) for _ in range(3)]
        user = await gateway.get(f"/api/users/{me['id']}", headers=headers)
        token = await access_token(gateway, str(me["email"]))
        books = await book_ids(gateway)
        ready = await admin.get("/ready")
        status = await admin.get("/status")
        orders_ready = await admin.get(f"{stack.services['orders'].url}/ready")

    assert before.status_code == 200
    for refused in orders:
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["code"] == "UNAVAILABLE"
        assert int(refused.headers["retry-after"]) >= 1
    assert user.status_code == 200
    assert token.count(".") == 2  # a signed JWT: users-service signed it, its database up
    assert books
    assert ready.status_code == 200
    assert status.json()["upstreams"]["orders"]["status"] == "unavailable"
    assert status.json()["upstreams"]["users"]["status"] == "ok"
    assert orders_ready.status_code == 503
    assert orders_ready.json()["checks"]["database"] == "unavailable"
