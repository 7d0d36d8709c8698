"""A webhook receiver on loopback: an aiohttp server that keeps every POST it is sent.

Each endpoint is a path ``/hooks/<name>``; every POST to it is kept (when it arrived, its
headers, its body byte for byte, repeats included) and answered with the name's scripted
statuses first, then 200. Extra GET routes (a JWKS for a service under test, say) can be
served beside them.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from .aiohttp_servers import serving
from .events import eventually

RouteHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class Receipt:
    """One POST the receiver answered."""

    arrived: float  # time.time() when it was read
    headers: dict[str, str]
    body: bytes

    @property
    def webhook_id(self) -> str:
        return self.headers["webhook-id"]

    @property
    def event(self) -> dict[str, Any]:
        """The body as JSON: the event's CloudEvents document."""
        document: dict[str, Any] = orjson.loads(self.body)
        return document


@dataclass
class WebhookReceiver:
    """The receiver's URLs, what each endpoint received, and what it is to answer next."""

    base_url: str
    received: dict[str, list[Receipt]] = field(default_factory=lambda: defaultdict(list))
    scripts: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))

    def url(self, name: str = "hook") -> str:
        return f"{self.base_url}/hooks/{name}"

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        name = request.match_info["name"]
        self.received[name].append(Receipt(time.time(), dict(request.headers), body))
        script = self.scripts[name]
        return web.Response(status=script.pop(0) if script else 200)

    async def wait_for(self, name: str, count: int) -> list[Receipt]:
        """The first ``count`` POSTs to ``name``, once they have come (bounded wait)."""

        async def arrived() -> bool:
            return len(self.received[name]) >= count

        await eventually(arrived, f"{count} POSTs to {name}")
        return self.received[name][:count]


@asynccontextmanager
async def webhook_receiver(
    get_routes: Mapping[str, RouteHandler] | None = None,
    host: str = "127.0.0.1",
) -> AsyncIterator[WebhookReceiver]:
    """A receiver listening on a free port of ``host`` (loopback unless told: a container
    reaches its host's bridge address) for the block's duration."""
    receiver = WebhookReceiver("")
    app = web.Application()
    app.router.add_post("/hooks/{name}", receiver.handle)
    for path, handler in (get_routes or {}).items():
        app.router.add_get(path, handler)
    async with serving(app, host) as receiver.base_url:
        yield receiver
