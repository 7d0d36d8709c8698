"""An aiohttp application served on a free loopback port for a block: the stand-ins tests
talk to over real sockets (an upstream, a users-service answering one route, a receiver)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from aiohttp import web

from .ports import free_port


@contextlib.asynccontextmanager
async def serving(app: web.Application, host: str = "127.0.0.1") -> AsyncIterator[str]:
    """``app`` listening on ``host`` (loopback unless told) for the block's duration; yields
    its base URL."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    try:
        await web.TCPSite(runner, host, port).start()
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()
