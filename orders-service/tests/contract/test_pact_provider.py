"""orders-service's events keep every contract their consumers committed
(``contracts/pacts/*-orders-service-events.json``): each expected event is made by the change
that makes it, through the service's own store and event log on a real database, and read
back from the outbox as the relay would publish it.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from tortoise.context import TortoiseContext

from api_shared.transactions import in_transaction
from api_testkit.databases import migrated_settings
from api_testkit.pacts import ORDERS_SERVICE_EVENTS, recorded_event, verify_pacts
from orders_service.changes import CREATED
from orders_service.database import database_config
from orders_service.events import OutboxEventLog, event_type
from orders_service.ports import stored_items
from orders_service.repository import OrderRepository
from orders_service.services import utc_now
from orders_service.settings import Settings


@pytest.fixture
async def database() -> AsyncIterator[None]:
    """The ORM open on a fresh, migrated orders database of this test's own."""

    def on(url: str) -> Settings:
        return Settings(database_url=url, environment="development")

    async with (
        migrated_settings("orders", on, database_config) as settings,
        TortoiseContext() as context,
    ):
        await context.init(config=database_config(settings))
        yield


async def test_orders_service_events_keep_their_consumers_contracts(database: None) -> None:
    async with in_transaction():  # the unit of work of POST /orders
        order = await OrderRepository().create(
            user_id=uuid.uuid4(), items=stored_items([("a-book", 2)]), note=None, now=utc_now()
        )
        await OutboxEventLog().record(CREATED, order)
    created = event_type(CREATED)
    await verify_pacts(
        ORDERS_SERVICE_EVENTS,
        messages={created: await recorded_event(created, str(order.id))},
    )
