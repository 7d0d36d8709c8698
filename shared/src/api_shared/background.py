"""Jobs run every so often while a server runs (purging expired idempotency records, sessions)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from api_shared.types import App

logger = logging.getLogger(__name__)


class Periodic:
    """Runs ``job`` at start and then every ``interval_s``; a failing run is logged, not fatal."""

    def __init__(self, name: str, job: Callable[[], Awaitable[object]], interval_s: float) -> None:
        self.name = name
        self.job = job
        self.interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run_forever(), name=self.name)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _run_forever(self) -> None:
        while True:
            try:
                outcome = await self.job()
                logger.debug("periodic job ran", extra={"job": self.name, "outcome": outcome})
            except Exception:
                logger.warning("periodic job failed", extra={"job": self.name}, exc_info=True)
            await asyncio.sleep(self.interval_s)


def install_periodic(
    app: App, name: str, job: Callable[[], Awaitable[object]], interval_s: float
) -> Periodic:
    """Run ``job`` every ``interval_s`` while ``app`` serves (started after it listens)."""
    periodic = Periodic(name, job, interval_s)

    async def start(app: App) -> None:
        await periodic.start()

    async def stop(app: App) -> None:
        await periodic.stop()

    app.register_listener(start, "after_server_start")
    app.register_listener(stop, "before_server_stop")
    return periodic
