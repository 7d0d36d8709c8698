"""An event stream's client for the latency bench: a customer's ``GET /api/events/stream``
through the gateway, read by httpx-sse, noting when each order's first event arrived.

``order_events`` runs it beside its webhook receiver, so one run measures commit → webhook
and commit → stream on the same orders.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from datetime import datetime

import httpx
from httpx_sse import aconnect_sse


class StreamReader:
    """Reads one stream until closed: ``arrivals`` maps an order id to (when its event of
    ``event_type`` arrived, the event's ``time``), epoch seconds, first arrival only."""

    def __init__(self, event_type: str) -> None:
        self.event_type = event_type
        self.arrivals: dict[str, tuple[float, float]] = {}
        self.opened = asyncio.Event()

    async def read(self, client: httpx.AsyncClient, headers: dict[str, str]) -> None:
        async with aconnect_sse(
            client, "GET", "/api/events/stream", headers=headers, params={"type": self.event_type}
        ) as source:
            source.response.raise_for_status()
            self.opened.set()
            async for sse in source.aiter_sse():
                if sse.event != self.event_type:
                    continue
                arrived = time.time()
                event = sse.json()
                moment = datetime.fromisoformat(event["time"]).timestamp()
                self.arrivals.setdefault(event["subject"], (arrived, moment))


@contextlib.asynccontextmanager
async def streaming(
    gateway_url: str, headers: dict[str, str], event_type: str
) -> AsyncIterator[StreamReader]:
    """A ``StreamReader`` reading in the background, open before the block starts."""
    reader = StreamReader(event_type)
    timeout = httpx.Timeout(30.0, read=None)  # a quiet stream is not a failure
    async with httpx.AsyncClient(base_url=gateway_url, timeout=timeout) as client:
        task = asyncio.create_task(reader.read(client, headers))
        opened = asyncio.create_task(reader.opened.wait())
        await asyncio.wait({task, opened}, timeout=30.0, return_when=asyncio.FIRST_COMPLETED)
        if not reader.opened.is_set():
            opened.cancel()
            task.cancel()
            raise RuntimeError("the event stream did not open")
        try:
            yield reader
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
                await task
