"""Work beside a server while it runs: jobs every so often (purging expired idempotency
records, sessions), and tasks that keep their own time (a JWKS refresh)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

logger = logging.getLogger(__name__)


class BackgroundTask:
    """Runs ``run()`` as a task from ``start`` until ``stop`` cancels it (a context Resource)."""

    def __init__(self, name: str, run: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self.name = name
        self.run = run
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name=self.name)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            # Whatever it ended with (cancelled, or failed earlier), the server goes on stopping.
            await asyncio.gather(task, return_exceptions=True)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()


class Periodic(BackgroundTask):
    """Runs ``job`` at start and then every ``interval_s``; a failing run is logged, not fatal."""

    def __init__(self, name: str, job: Callable[[], Awaitable[object]], interval_s: float) -> None:
        super().__init__(name, self._run_forever)
        self.job = job
        self.interval_s = interval_s

    async def _run_forever(self) -> None:
        while True:
            try:
                outcome = await self.job()
                logger.debug("periodic job ran", extra={"job": self.name, "outcome": outcome})
            except Exception:
                logger.warning("periodic job failed", extra={"job": self.name}, exc_info=True)
            await asyncio.sleep(self.interval_s)
