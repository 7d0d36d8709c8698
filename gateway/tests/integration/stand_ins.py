"""Upstreams for the gateway to talk to over real sockets: a healthy echo, and broken ones.

Broken upstreams are the test devices here (a hanging or garbage-speaking service cannot be
asked for); the real services are exercised end to end in tests/e2e.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web

from api_testkit.aiohttp_servers import serving
from api_testkit.ports import free_port

NAME = web.AppKey("name", str)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def _echo(request: web.Request) -> web.Response:
    """Answer with what arrived, so tests can see exactly what the gateway forwarded."""
    if request.path.endswith("/ready"):
        return web.json_response({"status": "ok"})
    if request.path.endswith("/teapot"):
        return web.json_response(
            {"error": {"code": "X", "message": "short and stout"}},
            status=418,
            headers={"X-Upstream": "kept"},
        )
    if request.path.endswith("/negotiated"):
        return web.json_response({"data": None}, headers={"Vary": "Accept"})  # as books does
    body = await request.read()
    return web.json_response(
        {
            "upstream": request.app[NAME],
            "method": request.method,
            "target": request.raw_path,  # as sent: still percent-encoded, with the query
            "headers": {k.lower(): v for k, v in request.headers.items()},
            "body": body.decode(),
        }
    )


@contextlib.asynccontextmanager
async def echo_upstream(name: str) -> AsyncIterator[str]:
    app = web.Application()
    app[NAME] = name
    app.router.add_route("*", "/{tail:.*}", _echo)
    async with serving(app) as url:
        yield url


@contextlib.asynccontextmanager
async def stand_in(handlers: Mapping[str, Handler]) -> AsyncIterator[str]:
    """A service answering each path of ``handlers`` with its handler (any method); else 404."""

    async def serve(request: web.Request) -> web.StreamResponse:
        handler = handlers.get(request.path)
        if handler is None:
            return web.json_response({"error": {"code": "NOT_FOUND"}}, status=404)
        return await handler(request)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", serve)
    async with serving(app) as url:
        yield url


@contextlib.asynccontextmanager
async def documents_upstream(documents: Mapping[str, Any]) -> AsyncIterator[str]:
    """A service that serves only ``documents``, by path (its API docs, say); else 404."""

    async def serve(request: web.Request) -> web.Response:
        if request.path not in documents:
            return web.json_response({"error": {"code": "NOT_FOUND"}}, status=404)
        return web.json_response(documents[request.path])

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", serve)
    async with serving(app) as url:
        yield url


class DocumentsService:
    """A service serving ``documents`` by path, counting the requests for each; while
    ``failing``, it answers 500 (a service that is down behind a healthy proxy)."""

    def __init__(self, documents: Mapping[str, Any]) -> None:
        self.documents = dict(documents)
        self.failing = False
        self.hits: Counter[str] = Counter()
        self.url = ""

    async def serve(self, request: web.Request) -> web.Response:
        self.hits[request.path] += 1
        if self.failing:
            return web.json_response({"error": {"code": "INTERNAL"}}, status=500)
        if request.path not in self.documents:
            return web.json_response({"error": {"code": "NOT_FOUND"}}, status=404)
        return web.json_response(self.documents[request.path])


@contextlib.asynccontextmanager
async def documents_service(documents: Mapping[str, Any]) -> AsyncIterator[DocumentsService]:
    """A running ``DocumentsService``; its ``url`` is set."""
    service = DocumentsService(documents)
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", service.serve)
    async with serving(app) as service.url:
        yield service


@contextlib.asynccontextmanager
async def raw_upstream(
    on_connect: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
) -> AsyncIterator[str]:
    """A TCP server doing whatever ``on_connect`` does: hang, speak garbage, reset."""
    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 1)


async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read(65536)
    await asyncio.sleep(30)


async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read(65536)
    writer.write(b"this is not HTTP at all\r\n\r\n")
    await writer.drain()
    writer.close()


async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Read the request, then close without answering (a replica going away mid-request)."""
    await reader.read(65536)
    writer.close()


def refused_url() -> str:
    return f"http://127.0.0.1:{free_port()}"  # nothing listens there
