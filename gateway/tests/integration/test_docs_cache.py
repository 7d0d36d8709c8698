"""The merged API documents are kept as bytes: a failed merge keeps serving the last complete
document, and retries back off instead of asking every upstream again on every call.

The upstreams are real HTTP servers that count the requests they get and can be made to
fail; the gateway is real, in this process, with the docs caches on a clock the test moves
(the only thing faked: waiting 30 s would prove nothing more).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import orjson
import pytest
from pydantic import BaseModel
from sanic import Sanic

from api_shared.events.asyncapi import DOCUMENT_PATH, service_document
from api_shared.events.catalog import EventCatalog, EventSpec
from api_shared.events.streams import ORDERS, USERS
from api_testkit.events import eventually
from api_testkit.in_process import serve_in_process
from api_testkit.tokens import TestSigner
from gateway.app import create_app
from gateway.context import wire
from gateway.docs.asyncapi import events_docs
from gateway.docs.cache import CACHE_S, RETRY_FIRST_S, RETRY_MAX_S
from gateway.docs.openapi import OPENAPI_PATH, openapi_docs
from gateway.settings import Settings

from .stand_ins import DocumentsService, documents_service


class Item(BaseModel):
    id: str


def events_part(service: str, *types: str) -> dict[str, Any]:
    stream = ORDERS if service == "orders" else USERS
    specs = [EventSpec(name, Item, "Something happened.") for name in types]
    catalog = EventCatalog(f"/{service}-service", stream, specs)
    return service_document(service, catalog, version="1.0.0")


class Clock:
    """The docs caches' clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


StartGateway = Callable[..., contextlib.AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def start_gateway(
    signer: TestSigner, clock: Clock, gateway_settings: Callable[..., Settings]
) -> StartGateway:
    """A gateway before the given upstreams (the others refused), its docs on ``clock``."""

    @contextlib.asynccontextmanager
    async def start(**upstream_urls: list[str]) -> AsyncIterator[httpx.AsyncClient]:
        Sanic.test_mode = True
        settings = gateway_settings(**upstream_urls)
        wired = wire(settings, verifier=signer.verifier())
        context = dataclasses.replace(
            wired,
            docs=openapi_docs(wired.http, wired.upstreams, clock=clock),
            events_docs=events_docs(wired.http, wired.upstreams, clock=clock),
        )
        async with (
            serve_in_process(create_app(settings, context=context)) as url,
            httpx.AsyncClient(base_url=url, timeout=10.0) as client,
        ):
            yield client

    return start


def addresses(response: httpx.Response) -> set[str]:
    return {channel["address"] for channel in response.json()["channels"].values()}


async def asked(
    gw: httpx.AsyncClient, document: str, service: DocumentsService, count: int
) -> None:
    """Call ``document`` until ``service`` has been asked ``count`` times: a call starts a
    round only once the round before has finished, and none while a backoff lasts."""
    path = DOCUMENT_PATH if document == "/asyncapi.json" else OPENAPI_PATH

    async def reached() -> bool:
        if service.hits[path] < count:
            assert (await gw.get(document)).status_code == 200
        return service.hits[path] >= count

    await eventually(reached, f"{service.url}{path} asked {count} times")


async def test_one_publisher_down_leaves_the_last_complete_document_served_and_unhammered(
    start_gateway: StartGateway, clock: Clock
) -> None:
    async with (
        documents_service({DOCUMENT_PATH: events_part("orders", "orders.order.created")}) as orders,
        documents_service({DOCUMENT_PATH: events_part("users", "users.user.deleted")}) as users,
        start_gateway(orders_service_urls=[orders.url], users_service_urls=[users.url]) as gw,
    ):
        # Ten first calls at once share one merge.
        first = await asyncio.gather(*(gw.get("/asyncapi.json") for _ in range(10)))
        assert {response.status_code for response in first} == {200}
        assert len({response.content for response in first}) == 1
        complete = first[0].content
        assert addresses(first[0]) == {
            "orders.events.order.created",
            "users.events.user.deleted",
        }
        assert "cache-control" not in first[0].headers
        assert (orders.hits[DOCUMENT_PATH], users.hits[DOCUMENT_PATH]) == (1, 1)

        # users-service goes down; the document expires and the next call starts a refresh.
        users.failing = True
        clock.advance(CACHE_S + 1)
        stale = await gw.get("/asyncapi.json")
        await asked(gw, "/asyncapi.json", users, 2)
        during_backoff = [await gw.get("/asyncapi.json") for _ in range(20)]

        assert stale.content == complete
        assert all(r.status_code == 200 and r.content == complete for r in during_backoff)
        assert (orders.hits[DOCUMENT_PATH], users.hits[DOCUMENT_PATH]) == (2, 2)

        # Each retry waits twice as long as the one before: one more round per wait.
        clock.advance(RETRY_FIRST_S)
        await asked(gw, "/asyncapi.json", users, 3)
        clock.advance(RETRY_FIRST_S)  # half of the second wait: no round
        after_short_wait = [await gw.get("/asyncapi.json") for _ in range(10)]

        assert all(r.content == complete for r in after_short_wait)
        assert (orders.hits[DOCUMENT_PATH], users.hits[DOCUMENT_PATH]) == (3, 3)


async def test_a_publisher_back_after_the_backoff_makes_the_next_document_complete(
    start_gateway: StartGateway, clock: Clock
) -> None:
    async with (
        documents_service({DOCUMENT_PATH: events_part("orders", "orders.order.created")}) as orders,
        documents_service({DOCUMENT_PATH: events_part("users", "users.user.deleted")}) as users,
        start_gateway(orders_service_urls=[orders.url], users_service_urls=[users.url]) as gw,
    ):
        complete = (await gw.get("/asyncapi.json")).content
        users.failing = True
        clock.advance(CACHE_S + 1)
        await asked(gw, "/asyncapi.json", users, 2)

        # Back, with a new event type: the next round after the backoff merges it.
        users.documents[DOCUMENT_PATH] = events_part(
            "users", "users.user.deleted", "users.user.created"
        )
        users.failing = False
        clock.advance(RETRY_MAX_S)
        await asked(gw, "/asyncapi.json", users, 3)  # answered from the kept bytes meanwhile

        async def merged_again() -> bool:
            return (await gw.get("/asyncapi.json")).content != complete

        await eventually(merged_again, "the document merged after users-service came back")
        served = await gw.get("/asyncapi.json")
        settled = [await gw.get("/asyncapi.json") for _ in range(10)]

        assert "users.events.user.created" in addresses(served)
        assert all(r.content == served.content for r in settled)
        assert (orders.hits[DOCUMENT_PATH], users.hits[DOCUMENT_PATH]) == (3, 3)


OPENAPI_PARTS: dict[str, dict[str, Any]] = {
    "users": {"paths": {"/api/users": {"post": {"responses": {}}}}},
    "orders": {"paths": {"/orders": {"get": {"responses": {}}}}},
    "books": {"paths": {"/graphql": {"post": {"responses": {}}}}},
    "webhooks": {"paths": {"/api/webhooks": {"get": {"responses": {}}}}},
}


@contextlib.asynccontextmanager
async def openapi_services() -> AsyncIterator[dict[str, DocumentsService]]:
    async with contextlib.AsyncExitStack() as stack:
        yield {
            name: await stack.enter_async_context(documents_service({OPENAPI_PATH: part}))
            for name, part in OPENAPI_PARTS.items()
        }


async def test_before_a_first_complete_merge_the_answering_services_are_served_uncached(
    start_gateway: StartGateway, clock: Clock
) -> None:
    async with openapi_services() as services:
        services["webhooks"].failing = True
        urls = {f"{name}_service_urls": [service.url] for name, service in services.items()}
        async with start_gateway(**urls) as gw:
            partial = await gw.get("/openapi.json")
            again = await gw.get("/openapi.json")  # within the backoff: nothing asked
            services["webhooks"].failing = False
            clock.advance(RETRY_FIRST_S)
            await asked(gw, "/openapi.json", services["webhooks"], 2)

            async def complete() -> bool:
                return "/api/webhooks" in (await gw.get("/openapi.json")).json()["paths"]

            await eventually(complete, "the complete document")
            served = await gw.get("/openapi.json")

    assert partial.status_code == 200
    assert partial.headers["cache-control"] == "no-store"
    assert {"/api/users", "/orders", "/graphql"} <= set(partial.json()["paths"])
    assert "/api/webhooks" not in partial.json()["paths"]
    assert again.content == partial.content
    assert "cache-control" not in served.headers
    assert orjson.loads(served.content)["paths"].keys() >= {"/api/webhooks", "/orders"}
    assert all(service.hits[OPENAPI_PATH] == 2 for service in services.values())


async def test_a_merge_that_fails_before_any_succeeded_is_503_with_retry_after(
    start_gateway: StartGateway, clock: Clock
) -> None:
    async with openapi_services() as services:
        # A document the merge cannot read: its paths are not an object.
        services["orders"].documents[OPENAPI_PATH] = {"paths": ["not", "an", "object"]}
        urls = {f"{name}_service_urls": [service.url] for name, service in services.items()}
        async with start_gateway(**urls) as gw:
            refused = await gw.get("/openapi.json")
            services["orders"].documents[OPENAPI_PATH] = OPENAPI_PARTS["orders"]
            clock.advance(RETRY_FIRST_S)
            served = await gw.get("/openapi.json")  # the first caller waits for the merge

    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "UNAVAILABLE"
    assert refused.headers["retry-after"] == "1"
    assert served.status_code == 200
    assert "/orders" in served.json()["paths"]
