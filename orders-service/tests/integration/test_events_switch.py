"""``EVENTS_ENABLED``: off, an order commits with no event and the service keeps no relay,
no NATS connection and no consumer; on (the default), the same creation records its event."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from api_shared.auth.principal import Principal
from api_shared.events.models import EventSequence, OutboxEvent
from api_shared.events.runtime import Events
from api_shared.http import HttpSession
from orders_service.context import Context, wire
from orders_service.models import Order
from orders_service.presenter import created_response
from orders_service.schemas import OrderCreate
from orders_service.settings import Settings


def wired(settings: Settings, *, events_enabled: bool) -> Context:
    """The service's parts as the app wires them, with its neighbours, events on or off."""
    return wire(settings.model_copy(update={"events_enabled": events_enabled}))


@asynccontextmanager
async def asking_neighbours(context: Context) -> AsyncIterator[Context]:
    """``context`` with its HTTP session open (the server opens it at start-up)."""
    (http,) = (part for part in context.resources if isinstance(part, HttpSession))
    await http.start()
    try:
        yield context
    finally:
        await http.stop()


async def create_order(context: Context, book_id: str) -> str:
    customer = Principal(str(uuid.uuid4()), "customer")
    order = OrderCreate.model_validate({"items": [{"bookId": book_id, "quantity": 1}]})
    async with asking_neighbours(context):
        creation = await context.orders.create(customer, order, respond=created_response)
    assert creation.response.status == 201
    order_id: str = creation.response.body["data"]["id"]
    return order_id


async def test_with_events_off_an_order_commits_and_records_no_event(
    settings: Settings, base_url: str, books: list[str]
) -> None:
    # base_url: the session's server, which has the database open for this test too.
    context = wired(settings, events_enabled=False)

    order_id = await create_order(context, books[0])

    assert await Order.filter(id=order_id).exists()
    assert not await OutboxEvent.filter(subject=order_id).exists()
    assert not await EventSequence.filter(subject=order_id).exists()


def test_with_events_off_the_service_has_no_relay_link_or_consumer(settings: Settings) -> None:
    context = wired(settings, events_enabled=False)

    assert context.events is None
    assert not [part for part in context.resources if isinstance(part, Events)]


async def test_with_events_on_the_same_creation_records_its_event(
    settings: Settings, base_url: str, books: list[str]
) -> None:
    context = wired(settings, events_enabled=True)

    order_id = await create_order(context, books[0])

    rows = await OutboxEvent.filter(subject=order_id)
    assert [(row.type, row.sequence) for row in rows] == [("orders.order.created", 1)]
    assert context.events is not None
    assert context.events in context.resources
