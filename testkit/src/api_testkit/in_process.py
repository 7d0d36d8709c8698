"""A service app served in the test's own event loop, on a free port, for real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from api_shared.loop_server import LoopServer, start_in_loop
from api_shared.types import App

from .ports import free_port


@asynccontextmanager
async def running_server(app: App, port: int | None = None) -> AsyncIterator[LoopServer]:
    """Run ``app`` on 127.0.0.1 in this event loop until the block ends."""
    running = await start_in_loop(app, "127.0.0.1", port or free_port())
    try:
        yield running
    finally:
        await running.close()


@asynccontextmanager
async def serve_in_process(app: App, port: int | None = None) -> AsyncIterator[str]:
    """``running_server``, for a test that needs only the base URL."""
    async with running_server(app, port) as server:
        yield server.url
