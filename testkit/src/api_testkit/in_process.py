"""A service app served in the test's own event loop, on a free port, for real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sanic.server.async_server import AsyncioServer

from api_shared.lingering import LingeringHttpProtocol
from api_shared.types import App

from .ports import free_port


class RunningServer:
    """A Sanic server started by hand: its URL, and the first step of its shutdown."""

    def __init__(self, server: AsyncioServer, url: str) -> None:
        self._server = server
        self.url = url
        self.stopping = False

    async def before_stop(self) -> None:
        """What SIGTERM sets off first: the server is stopping, but still answers."""
        if not self.stopping:
            self.stopping = True
            await self._server.before_stop()

    async def close(self) -> None:
        await self.before_stop()
        closing = self._server.close()
        if closing is not None:
            await closing
        await self._server.after_stop()


@asynccontextmanager
async def running_server(app: App, port: int | None = None) -> AsyncIterator[RunningServer]:
    """Run ``app`` on 127.0.0.1 in this event loop until the block ends."""
    port = port or free_port()
    server = await app.create_server(
        host="127.0.0.1",
        port=port,
        return_asyncio_server=True,
        access_log=False,
        protocol=LingeringHttpProtocol,  # as api_shared.runner serves
    )
    assert server is not None
    await server.startup()
    await server.before_start()
    await server.after_start()
    running = RunningServer(server, f"http://127.0.0.1:{port}")
    try:
        yield running
    finally:
        await running.close()


@asynccontextmanager
async def serve_in_process(app: App, port: int | None = None) -> AsyncIterator[str]:
    """``running_server``, for a test that needs only the base URL."""
    async with running_server(app, port) as server:
        yield server.url
