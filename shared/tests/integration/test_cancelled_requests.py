"""A client that goes away mid-request: an INFO line "request cancelled", never an error.

A real HTTP server in this process, built with the frame (``create_service_app``); its
route holds the request until the client has closed its connection, so the handler is
cancelled exactly there (what Sanic does when the connection is lost). Before #39 that was
an ERROR "unhandled error" with a traceback and a 500 in the metrics; the rule is the
frame's (``api_shared.cancelled``), so every service keeps it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

import httpx
import pytest
from sanic import Request, Sanic
from sanic.response import HTTPResponse, json

from api_shared.service_app import create_service_app
from api_shared.settings import ServiceSettings
from api_testkit.in_process import serve_in_process

WAIT_S = 10.0
QUERY = b'{"query": "{ books { id } }"}'


class Held:
    """Holds each request at its read until ``release`` (set once the client left)."""

    def __init__(self) -> None:
        self.reading = asyncio.Event()
        self.release = asyncio.Event()

    async def read(self) -> dict[str, list[str]]:
        self.reading.set()
        await self.release.wait()
        return {"books": []}


@pytest.fixture
async def held() -> AsyncIterator[tuple[str, Held]]:
    """A service of the frame whose ``POST /graphql`` waits on a ``Held``, served in process."""
    Sanic.test_mode = True
    store = Held()
    app = create_service_app("cancelled-requests", ServiceSettings(environment="development"))

    @app.post("/graphql")
    async def answer(request: Request) -> HTTPResponse:
        return json({"data": await store.read()})

    async with serve_in_process(app) as url:
        yield url, store


async def until(condition: Callable[[], object], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"no {what} within {WAIT_S}s")
        await asyncio.sleep(0.01)


async def test_a_client_that_closes_its_connection_is_logged_as_a_cancelled_request(
    held: tuple[str, Held], caplog: pytest.LogCaptureFixture
) -> None:
    url, store = held
    caplog.set_level(logging.INFO)
    port = int(url.rsplit(":", 1)[1])
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        b"POST /graphql HTTP/1.1\r\nhost: books\r\ncontent-type: application/json\r\n"
        b"x-request-id: client-went-away-1\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(QUERY), QUERY)
    )
    await writer.drain()
    await asyncio.wait_for(store.reading.wait(), WAIT_S)

    writer.close()  # the client goes away while its query is being answered
    await writer.wait_closed()

    def cancelled() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.getMessage() == "request cancelled"]

    def access() -> list[logging.LogRecord]:
        return [
            r
            for r in caplog.records
            if r.name == "api_shared.logging.access"
            and getattr(r, "requestId", None) == "client-went-away-1"
        ]

    await until(lambda: cancelled() and access(), "cancellation and access lines")
    [line] = cancelled()
    assert line.name == "api_shared.cancelled"
    assert line.levelno == logging.INFO
    assert line.exc_info is None
    assert line.requestId == "client-went-away-1"  # type: ignore[attr-defined]  # an extra
    assert line.reason == "the client closed the connection"  # type: ignore[attr-defined]
    assert line.path == "/graphql"  # type: ignore[attr-defined]
    [access_line] = access()
    assert access_line.status == 499  # type: ignore[attr-defined]  # an extra of the line
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []

    # The service goes on: the next client is answered by the same route.
    store.release.set()
    async with httpx.AsyncClient(base_url=url, timeout=WAIT_S) as client:
        response = await client.post("/graphql", json={"query": "{ books { id } }"})
    assert response.status_code == 200
    assert response.json() == {"data": {"books": []}}
