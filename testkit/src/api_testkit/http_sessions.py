"""A service's HTTP session (api_shared.http.HttpSession), open for a block of a test."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from api_shared.http import HttpSession


@contextlib.asynccontextmanager
async def open_session(timeout_s: float) -> AsyncIterator[HttpSession]:
    """An ``HttpSession`` with that total timeout per call, started and, after, stopped."""
    session = HttpSession(timeout_s=timeout_s)
    await session.start()
    try:
        yield session
    finally:
        await session.stop()
