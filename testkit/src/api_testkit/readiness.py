"""Waiting for a starting server: until its ``/ready`` answers 200, or its process is gone.

One rule for every caller, blocking (``wait_ready``) or not (``until_ready``): probe the URL,
fail at once when the process has exited (with what it left behind: its log), fail with the
last answer when the time is up.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

READY_TIMEOUT_S = 60.0
PROBE_TIMEOUT_S = 2.0

Exited = Callable[[], str | None]
"""None while the process runs; once it has exited, what it left (its log's tail)."""


def still_running() -> str | None:
    """The ``Exited`` of a server nobody here started: never known to have exited."""
    return None


def process_exited(process: asyncio.subprocess.Process, log: Path) -> Exited:
    """The ``Exited`` of an asyncio child process writing to ``log``."""

    def left() -> str | None:
        if process.returncode is None:
            return None
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"
        return f"exit code {process.returncode}:\n{tail}"

    return left


class NotReadyError(AssertionError):
    """A server that exited while starting, or was not ready in time."""


async def until_ready(
    url: str,
    exited: Exited = still_running,
    *,
    timeout_s: float = READY_TIMEOUT_S,
    interval_s: float = 0.05,
) -> float:
    """Until ``url`` answers 200; returns when it did (``time.monotonic()``)."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    async with httpx.AsyncClient(timeout=PROBE_TIMEOUT_S) as client:
        while True:
            try:
                response = await client.get(url)
                if response.status_code == 200:
                    return time.monotonic()
                last = f"{response.status_code} {response.text[:300]}"
            except httpx.TransportError as error:
                last = repr(error)
            if (left := exited()) is not None:
                raise NotReadyError(f"{url}: the process exited while starting:\n{left}")
            if time.monotonic() > deadline:
                raise NotReadyError(f"{url} not ready after {timeout_s}s ({last})")
            await asyncio.sleep(interval_s)


def wait_ready(
    url: str, exited: Exited = still_running, *, timeout_s: float = READY_TIMEOUT_S
) -> float:
    """``until_ready`` for code that cannot await: it blocks the calling thread (and the
    event loop, for a caller inside one) while a thread of its own waits."""
    with ThreadPoolExecutor(max_workers=1) as thread:
        waiting = thread.submit(asyncio.run, until_ready(url, exited, timeout_s=timeout_s))
        return waiting.result()
