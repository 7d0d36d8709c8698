"""A real HTTP hop in front of a real service, which a test can read, hold or take down.

The server under test is configured with the gate's URL instead of the service's. Requests
pass through over real sockets, unchanged both ways, and are kept (``passed``): a test can
say what its server asked. ``hold()`` makes them wait until released, to stage a race at the
moment a neighbour is asked; ``down()`` closes the gate's port for a block, so that the
server meets nothing listening there: an outage as real as a stopped process, and over as
soon as the block ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from aiohttp import web
from multidict import CIMultiDict

from .ports import free_port

# Headers about one connection, not the message: each side of the gate sets its own.
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "upgrade"}
)
SHUTDOWN_TIMEOUT_S = 1.0  # going down drops requests in flight, as a dying process does


@dataclass(frozen=True, slots=True)
class Passed:
    """A request as it went through the gate."""

    method: str
    path: str  # with its query
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


class Gate:
    """A forwarder on a free loopback port to ``target`` (a base URL); ``open`` it first."""

    def __init__(self, target: str) -> None:
        self.target = target.rstrip("/")
        self.port = free_port()
        self.passed: list[Passed] = []
        self.entered = asyncio.Event()  # set when a held request is waiting
        self._release: asyncio.Event | None = None
        self._runner: web.AppRunner | None = None
        self._client: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def hold(self) -> asyncio.Event:
        """Make every request wait for the returned event; ``entered`` is set when one does."""
        self.entered.clear()
        self._release = asyncio.Event()
        return self._release

    def reset(self) -> None:
        """Forget what passed, and let held requests go."""
        if self._release is not None:
            self._release.set()
        self._release = None
        self.entered.clear()
        self.passed.clear()

    @asynccontextmanager
    async def down(self) -> AsyncIterator[None]:
        """Nothing listens on the gate's port for the block; its connections are closed."""
        await self._stop_listening()
        try:
            yield
        finally:
            await self._listen()

    async def open(self) -> None:
        self._client = aiohttp.ClientSession(auto_decompress=False)  # bodies pass as they are
        await self._listen()

    async def close(self) -> None:
        self.reset()
        await self._stop_listening()
        if self._client is not None:
            await self._client.close()

    async def _listen(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT_S)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def _stop_listening(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _forward(self, request: web.Request) -> web.Response:
        assert self._client is not None
        body = await request.read()
        self.passed.append(Passed(request.method, request.path_qs, dict(request.headers), body))
        if self._release is not None:
            self.entered.set()
            await self._release.wait()
        async with self._client.request(
            request.method,
            f"{self.target}{request.path_qs}",
            headers=_end_to_end(request.headers),
            data=body,
            allow_redirects=False,
        ) as answer:
            return web.Response(
                status=answer.status, body=await answer.read(), headers=_end_to_end(answer.headers)
            )


@asynccontextmanager
async def gate_to(target: str) -> AsyncIterator[Gate]:
    """An open ``Gate`` to ``target`` for the block."""
    gate = Gate(target)
    await gate.open()
    try:
        yield gate
    finally:
        await gate.close()


def _end_to_end(headers: Mapping[str, str]) -> CIMultiDict[str]:
    return CIMultiDict((k, v) for k, v in headers.items() if k.lower() not in HOP_BY_HOP)
