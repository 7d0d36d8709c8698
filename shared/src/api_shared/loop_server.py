"""A Sanic app served in an event loop that is already running: the gateway's admin port
beside its public one, a test's service beside the test.

``app.run`` owns its loop and its process; here the server is started and stopped by hand,
in Sanic's own order (``startup``, ``before_start``, ``after_start``; ``before_stop``, the
close, ``after_stop``), so that the app's listeners run as they would under ``app.run``.
It speaks HTTP as every server of the platform does (api_shared.lingering).
"""

from __future__ import annotations

from sanic.server.async_server import AsyncioServer

from api_shared.lingering import LingeringHttpProtocol
from api_shared.types import App


class LoopServer:
    """A started server: where it listens, and its shutdown in Sanic's steps."""

    def __init__(self, server: AsyncioServer, host: str, port: int) -> None:
        self._server = server
        self.host, self.port = host, port
        self.stopping = False

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def before_stop(self) -> None:
        """What SIGTERM sets off first: the server is stopping, but still answers."""
        if not self.stopping:
            self.stopping = True
            await self._server.before_stop()

    async def close(self) -> None:
        """Stop listening, close the connections, and run the app's last listeners."""
        await self.before_stop()
        closing = self._server.close()
        if closing is not None:
            await closing
        await self._server.after_stop()


async def start_in_loop(app: App, host: str, port: int) -> LoopServer:
    """Serve ``app`` on ``host:port`` in the running loop until ``close``."""
    server = await app.create_server(
        host=host,
        port=port,
        return_asyncio_server=True,
        access_log=False,
        protocol=LingeringHttpProtocol,
    )
    assert server is not None  # return_asyncio_server=True
    await server.startup()
    await server.before_start()
    await server.after_start()
    return LoopServer(server, host, port)
