"""The outbox and its relay on a real database and a real nats-server (JetStream)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

import pytest
from pydantic import BaseModel
from tortoise import connections

from api_shared.events.access import ORDERS_SERVICE
from api_shared.events.catalog import EventCatalog, EventSpec, UndeclaredEventError
from api_shared.events.envelope import CONTENT_TYPE
from api_shared.events.link import Backoff, NatsLink
from api_shared.events.models import EventSequence, OutboxEvent
from api_shared.events.outbox import Outbox, OutsideTransactionError
from api_shared.events.relay import Relay
from api_shared.events.server import NatsServer
from api_shared.events.streams import ORDERS, ensure_stream
from api_shared.transactions import in_transaction
from api_testkit.databases import orm_on_temporary_database
from api_testkit.events import eventually, inspector, nats_client, read_stream, running_nats_server


class Reference(BaseModel):
    id: str


CATALOG = EventCatalog(
    source="/orders-service",
    stream=ORDERS,
    events=[
        EventSpec(f"orders.order.{change}", Reference, f"An order {change}.")
        for change in ("created", "confirmed", "shipped", "delivered", "cancelled")
    ],
)
outbox = Outbox(CATALOG)


@pytest.fixture(scope="module")
async def database() -> AsyncIterator[None]:
    async with orm_on_temporary_database("events", ["api_shared.events.models"]):
        yield


@pytest.fixture
async def empty_outbox(database: None) -> None:
    await OutboxEvent.all().delete()
    await EventSequence.all().delete()


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    with running_nats_server(tmp_path / "nats") as server:
        yield server


async def start_relay(server: NatsServer) -> tuple[NatsLink, Relay]:
    """orders-service's relay, as its NATS user."""
    link = NatsLink(server.login(ORDERS_SERVICE.name))
    relay = Relay(link, ORDERS, batch_size=7, backoff=Backoff(initial_s=0.05, maximum_s=0.5))
    await link.start()
    await relay.start()
    return link, relay


async def stop_relay(link: NatsLink, relay: Relay) -> None:
    await relay.stop()
    await link.stop()


async def relay_until_published(server: NatsServer) -> Relay:
    """Run a relay until the outbox is empty; the stopped relay, for its stats."""
    link, relay = await start_relay(server)
    try:
        await eventually(all_published, "the outbox to be published")
    finally:
        await stop_relay(link, relay)
    return relay


async def record_changes(subject: str, *changes: str) -> None:
    for change in changes:
        async with in_transaction():
            await outbox.record(f"orders.order.{change}", subject, {"id": subject})


async def all_published() -> bool:
    return not await OutboxEvent.filter(published_at=None).exists()


async def sequences_of(subject: str, *, order_by: str) -> list[int]:
    """The sequences of ``subject``'s events."""
    query = OutboxEvent.filter(subject=subject).order_by(order_by)
    # cast: Tortoise types values_list as tuples, even the flat list of one column.
    return cast(list[int], await query.values_list("sequence", flat=True))


async def test_an_event_recorded_outside_a_transaction_is_refused(empty_outbox: None) -> None:
    with pytest.raises(OutsideTransactionError):
        await outbox.record("orders.order.created", "order-1", {})

    assert await OutboxEvent.all().count() == 0


async def test_an_event_type_the_catalog_lacks_is_refused_and_nothing_is_written(
    empty_outbox: None,
) -> None:
    with pytest.raises(UndeclaredEventError, match=r"orders\.order\.archived"):
        async with in_transaction():
            await outbox.record("orders.order.archived", "order-1", {"id": "order-1"})

    assert await OutboxEvent.all().count() == 0
    assert await EventSequence.all().count() == 0


async def test_each_subject_numbers_its_events_from_one(empty_outbox: None) -> None:
    async with in_transaction():
        first = await outbox.record("orders.order.created", "order-a", {})
        other = await outbox.record("orders.order.created", "order-b", {})
    async with in_transaction():
        second = await outbox.record("orders.order.confirmed", "order-a", {})

    assert (first.sequence, second.sequence, other.sequence) == (1, 2, 1)
    assert await sequences_of("order-a", order_by="id") == [1, 2]


async def test_a_disabled_outbox_writes_nothing_and_still_refuses_outside_a_transaction(
    empty_outbox: None,
) -> None:
    disabled = Outbox(CATALOG, enabled=False)  # EVENTS_ENABLED=false

    async with in_transaction():
        event = await disabled.record("orders.order.created", "order-a", {"id": "order-a"})
    with pytest.raises(OutsideTransactionError):
        await disabled.record("orders.order.created", "order-b", {})

    assert (event.type, event.sequence) == ("orders.order.created", None)
    assert await OutboxEvent.all().count() == 0
    assert await EventSequence.all().count() == 0


async def test_an_event_whose_change_rolled_back_is_gone_with_its_number(
    empty_outbox: None,
) -> None:
    async def fail_after_recording() -> None:
        async with in_transaction():
            await outbox.record("orders.order.created", "order-a", {})
            raise RuntimeError("the change failed")

    with pytest.raises(RuntimeError):
        await fail_after_recording()
    async with in_transaction():
        event = await outbox.record("orders.order.created", "order-a", {})

    assert await OutboxEvent.all().count() == 1
    assert event.sequence == 1


async def test_the_relay_publishes_every_event_in_order_with_its_id_as_message_id(
    empty_outbox: None, nats_server: NatsServer
) -> None:
    await record_changes("order-a", "created", "confirmed", "shipped", "delivered")
    await relay_until_published(nats_server)

    stored = await read_stream(inspector(nats_server), "ORDERS")
    assert [m.event.type for m in stored] == [
        "orders.order.created",
        "orders.order.confirmed",
        "orders.order.shipped",
        "orders.order.delivered",
    ]
    assert stored[0].subject == "orders.events.order.created"
    assert [m.event.sequence for m in stored] == [1, 2, 3, 4]
    assert all(m.message_id == m.event.id for m in stored)


async def test_events_recorded_while_nats_is_down_wait_and_are_all_published_once_it_returns(
    empty_outbox: None, nats_server: NatsServer
) -> None:
    link, relay = await start_relay(nats_server)
    try:
        await record_changes("order-a", "created")
        await eventually(all_published, "the first event to be published")
        nats_server.stop()
        await record_changes("order-a", "confirmed", "shipped")
        await record_changes("order-b", "created", "cancelled")

        async def relay_down() -> bool:
            return not relay.healthy

        await eventually(relay_down, "the relay to notice NATS is gone")
        assert await OutboxEvent.filter(published_at=None).count() == 4

        nats_server.start()
        await eventually(all_published, "the waiting events to be published")
    finally:
        await stop_relay(link, relay)

    stored = await read_stream(inspector(nats_server), "ORDERS")
    # Each order's events in its order; orders interleave (the relay promises no more).
    assert [m.event.sequence for m in stored if m.event.subject == "order-a"] == [1, 2, 3]
    assert [m.event.sequence for m in stored if m.event.subject == "order-b"] == [1, 2]
    assert len(stored) == 5


async def test_a_relay_that_published_but_died_before_marking_leaves_no_duplicate_on_the_stream(
    empty_outbox: None, nats_server: NatsServer
) -> None:
    await record_changes("order-a", "created", "confirmed")
    # The first life of the relay: published, acked, then died before the mark committed.
    async with nats_client(nats_server.login(ORDERS_SERVICE.name)) as client:
        js = client.jetstream()
        await ensure_stream(js, ORDERS)
        for row in await OutboxEvent.all().order_by("id"):
            await js.publish(
                "orders.events." + row.type.split(".", 1)[1],
                row.document.encode(),
                headers={"Nats-Msg-Id": row.event_id, "Content-Type": CONTENT_TYPE},
            )
    assert await OutboxEvent.filter(published_at=None).count() == 2

    relay = await relay_until_published(nats_server)  # its second life

    stored = await read_stream(inspector(nats_server), "ORDERS")
    assert [m.event.type for m in stored] == ["orders.order.created", "orders.order.confirmed"]
    assert relay.stats.duplicates == 2


async def test_two_relays_on_one_database_publish_each_event_once_in_each_orders_order(
    empty_outbox: None, nats_server: NatsServer
) -> None:
    orders = [f"order-{n}" for n in range(6)]
    relays = [await start_relay(nats_server), await start_relay(nats_server)]
    try:
        await asyncio.gather(
            *(record_changes(o, "created", "confirmed", "shipped", "delivered") for o in orders)
        )
        await eventually(all_published, "both relays to publish everything")
    finally:
        for link, relay in relays:
            await stop_relay(link, relay)

    stored = await read_stream(inspector(nats_server), "ORDERS")
    assert len(stored) == len({m.event.id for m in stored}) == 24
    for order in orders:
        assert [m.event.sequence for m in stored if m.event.subject == order] == [1, 2, 3, 4]
    published = sum(relay.stats.published for _, relay in relays)
    duplicates = sum(relay.stats.duplicates for _, relay in relays)
    assert published - duplicates == 24
    if connections.get("default").capabilities.dialect == "postgres":
        # The batch lock: no replica even tries a row another one published.
        assert duplicates == 0


async def test_rows_published_long_ago_are_purged_and_the_subjects_numbering_goes_on(
    empty_outbox: None, nats_server: NatsServer
) -> None:
    await record_changes("order-a", "created", "confirmed")
    relay = await relay_until_published(nats_server)
    first = await OutboxEvent.filter(subject="order-a").order_by("sequence").first()
    assert first is not None
    two_days_ago = datetime.now(UTC) - timedelta(days=2)
    await OutboxEvent.filter(id=first.id).update(published_at=two_days_ago)

    purged = await relay.purge_published()
    async with in_transaction():
        third = await outbox.record("orders.order.shipped", "order-a", {})

    assert purged == 1
    assert await sequences_of("order-a", order_by="sequence") == [2, 3]
    assert third.sequence == 3
