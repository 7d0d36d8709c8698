"""``GET /asyncapi.json``: the services' AsyncAPI documents, fetched and merged into one that
a third-party AsyncAPI parser accepts."""

from __future__ import annotations

from pydantic import BaseModel

from api_shared.events.asyncapi import DOCUMENT_PATH, service_document
from api_shared.events.catalog import EventCatalog, EventSpec
from api_shared.events.streams import ORDERS, USERS
from api_shared.version import service_version
from api_testkit.asyncapi import parse_asyncapi

from .conftest import StartGateway
from .stand_ins import documents_upstream


class Thing(BaseModel):
    id: str


ORDERS_PART = service_document(
    "orders",
    EventCatalog("/orders-service", ORDERS, [EventSpec("orders.order.created", Thing, "New.")]),
    version="1.0.0",
)
USERS_PART = service_document(
    "users",
    EventCatalog("/users-service", USERS, [EventSpec("users.user.deleted", Thing, "Gone.")]),
    version="1.0.0",
)


async def test_the_events_of_every_publishing_service_are_served_as_one_asyncapi_document(
    start_gateway: StartGateway,
) -> None:
    async with (
        documents_upstream({DOCUMENT_PATH: ORDERS_PART}) as orders,
        documents_upstream({DOCUMENT_PATH: USERS_PART}) as users,
        start_gateway(orders_service_urls=[orders], users_service_urls=[users]) as gw,
    ):
        served = await gw.get("/asyncapi.json")

    assert served.status_code == 200
    assert served.headers["content-type"].startswith("application/json")
    document = served.json()
    assert document["info"]["title"] == "API platform events"
    assert document["info"]["version"] == service_version("gateway")  # the merger's
    addresses = {channel["address"] for channel in document["channels"].values()}
    assert addresses == {"orders.events.order.created", "users.events.user.deleted"}
    report = await parse_asyncapi(document)
    assert report.parsed, report.diagnostics
    assert report.errors == [], report.diagnostics


async def test_a_service_that_is_down_leaves_out_its_events_only(
    start_gateway: StartGateway,
) -> None:
    async with (
        documents_upstream({DOCUMENT_PATH: USERS_PART}) as users,
        start_gateway(users_service_urls=[users]) as gw,  # orders-service: nothing listens
    ):
        document = (await gw.get("/asyncapi.json")).json()

    assert [channel["address"] for channel in document["channels"].values()] == [
        "users.events.user.deleted"
    ]
