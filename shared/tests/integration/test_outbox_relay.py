"""The outbox and its relay on a real database and a real nats-server (JetStream)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

import pytest
from pydantic import BaseModel
from tortoise import connections

from api_devservers.nats_server import NatsServer
from api_shared.events.access import ORDERS_SERVICE
from api_shared.events.catalog import EventCatalog, EventSpec, UndeclaredEventError
from api_shared.events.credentials import NatsLogin
from api_shared.events.envelope import CONTENT_TYPE
from api_shared.events.history import events_after
from api_shared.events.link import Backoff, NatsLink
from api_shared.events.models import EventSequence, OutboxEvent
from api_shared.events.outbox import Outbox, OutsideTransactionError
from api_shared.events.relay import Relay
from api_shared.events.settings import DEFAULT_HISTORY_RETENTION_S
from api_shared.events.streams import ORDERS, ensure_stream
from api_shared.events.wake import Listener, unwatch_locally, watch_locally
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


# A poll no test waits for: what such a relay publishes at once, a commit's wake sent it.
LONG_POLL_S = 30.0
# Well before that poll; a wake takes milliseconds.
WAKE_BOUND_S = 5.0


def on_postgres() -> bool:
    return bool(connections.get("default").capabilities.dialect == "postgres")


async def start_relay(server: NatsServer, *, poll_s: float | None = None) -> tuple[NatsLink, Relay]:
    """orders-service's relay, as its NATS user; polling every ``poll_s`` if given."""
    link = NatsLink(server.login(ORDERS_SERVICE.name))
    polls = {} if poll_s is None else {"idle_s": poll_s, "listening_idle_s": poll_s}
    relay = Relay(
        link, ORDERS, batch_size=7, backoff=Backoff(initial_s=0.05, maximum_s=0.5), **polls
    )
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
    assert relay.retention_s == DEFAULT_HISTORY_RETENTION_S == 30 * 24 * 3600
    past_retention = datetime.now(UTC) - timedelta(days=31)
    await OutboxEvent.filter(id=first.id).update(published_at=past_retention)

    purged = await relay.purge_published()
    async with in_transaction():
        third = await outbox.record("orders.order.shipped", "order-a", {})

    assert purged == 1
    assert await sequences_of("order-a", order_by="sequence") == [2, 3]
    assert third.sequence == 3


def idle_relay(retention_s: float) -> Relay:
    """A relay that is never started: its purge needs the database only."""
    login = NatsLogin("nats://127.0.0.1:1", ORDERS_SERVICE.name, Path("unused.nk"))
    return Relay(NatsLink(login), ORDERS, retention_s=retention_s)


async def test_the_purge_keeps_what_was_published_within_the_retention_to_the_microsecond(
    empty_outbox: None,
) -> None:
    await record_changes("order-a", "created", "confirmed", "shipped", "delivered")
    now = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    retention = timedelta(hours=1)
    rows = await OutboxEvent.filter(subject="order-a").order_by("sequence")
    published = [
        now - retention - timedelta(microseconds=1),  # just past it: purged
        now - retention,  # exactly at it: kept until the next purge
        now - retention + timedelta(microseconds=1),  # within it: kept
    ]
    for row, at in zip(rows, published, strict=False):
        await OutboxEvent.filter(id=row.id).update(published_at=at)

    purged = await idle_relay(retention.total_seconds()).purge_published(now=now)

    assert purged == 1
    # The fourth is unpublished: never purged, however old.
    assert await sequences_of("order-a", order_by="sequence") == [2, 3, 4]


async def test_a_longer_retention_keeps_what_a_shorter_one_purges(empty_outbox: None) -> None:
    await record_changes("order-a", "created")
    now = datetime.now(UTC)
    await OutboxEvent.filter(subject="order-a").update(published_at=now - timedelta(days=2))

    kept = await idle_relay(DEFAULT_HISTORY_RETENTION_S).purge_published(now=now)
    purged = await idle_relay(24 * 3600.0).purge_published(now=now)

    assert (kept, purged) == (0, 1)


async def test_a_subjects_history_is_its_events_after_a_sequence_published_or_not(
    empty_outbox: None, nats_server: NatsServer
) -> None:
    await record_changes("order-a", "created", "confirmed")
    await record_changes("order-b", "created")
    await relay_until_published(nats_server)
    await record_changes("order-a", "shipped", "delivered")  # committed, not yet published

    everything = await events_after("order-a", after=0, limit=100)
    later = await events_after("order-a", after=2, limit=100)
    first_two = await events_after("order-a", after=0, limit=2)
    none = await events_after("order-a", after=4, limit=100)

    assert [e["sequence"] for e in everything.events] == [1, 2, 3, 4]
    assert [e["type"] for e in everything.events] == [
        f"orders.order.{change}" for change in ("created", "confirmed", "shipped", "delivered")
    ]
    assert {e["subject"] for e in everything.events} == {"order-a"}
    stored = await OutboxEvent.filter(subject="order-a").order_by("sequence")
    assert [e["id"] for e in everything.events] == [row.event_id for row in stored]
    assert (everything.has_more, everything.last_sequence) == (False, 4)
    assert [e["sequence"] for e in later.events] == [3, 4]
    assert ([e["sequence"] for e in first_two.events], first_two.has_more) == ([1, 2], True)
    assert (none.events, none.has_more, none.last_sequence) == ([], False, None)


async def settled(relay: Relay) -> None:
    """Wait until ``relay`` finished its first rounds and, on PostgreSQL, listens."""

    async def idle() -> bool:
        return relay.healthy and (relay.listener.listening or not on_postgres())

    await eventually(idle, "the relay to settle")
    await asyncio.sleep(0.2)  # the round its listener's first wake started


async def record_then_roll_back(subject: str) -> None:
    async with in_transaction():
        await outbox.record("orders.order.created", subject, {"id": subject})
        raise RuntimeError("the change failed")


async def published_within(seconds: float, count: int) -> None:
    """Wait up to ``seconds`` for ``count`` rows to be published; fail past it."""

    async def done() -> bool:
        return await OutboxEvent.filter(published_at__isnull=False).count() >= count

    async def poll() -> None:
        for _ in itertools.count():
            if await done():
                return
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), seconds)


async def test_a_committed_event_leaves_at_once_not_at_the_relays_poll(
    empty_outbox: None, nats_server: NatsServer
) -> None:
    link, relay = await start_relay(nats_server, poll_s=LONG_POLL_S)
    try:
        await settled(relay)
        await record_changes("order-a", "created")
        await published_within(WAKE_BOUND_S, 1)
        await record_changes("order-a", "confirmed")
        await published_within(WAKE_BOUND_S, 2)
    finally:
        await stop_relay(link, relay)

    stored = await read_stream(inspector(nats_server), "ORDERS")
    assert [m.event.sequence for m in stored] == [1, 2]


async def test_a_commit_wakes_the_relays_and_a_rollback_wakes_none(empty_outbox: None) -> None:
    # What a relay waits on: its process's wake (SQLite) or the database's (PostgreSQL).
    wake = asyncio.Event()
    listener = Listener(wake)
    watch_locally(wake)
    try:
        if on_postgres():
            assert await listener.ensure(connections.get("default"))
        wake.clear()

        with pytest.raises(RuntimeError):
            await record_then_roll_back("order-a")
        await asyncio.sleep(0.3)  # a notification would have come by now
        assert not wake.is_set()

        await record_changes("order-a", "created")
        await asyncio.wait_for(wake.wait(), WAKE_BOUND_S)
    finally:
        unwatch_locally(wake)
        await listener.close()
    assert listener.notifications == (1 if on_postgres() else 0)


async def test_a_rolled_back_change_publishes_nothing_however_soon_the_relay_looks(
    empty_outbox: None, nats_server: NatsServer
) -> None:
    link, relay = await start_relay(nats_server, poll_s=LONG_POLL_S)
    try:
        await settled(relay)
        with pytest.raises(RuntimeError):
            await record_then_roll_back("order-a")
        await record_changes("order-b", "created")
        await published_within(WAKE_BOUND_S, 1)
    finally:
        await stop_relay(link, relay)

    stored = await read_stream(inspector(nats_server), "ORDERS")
    assert [m.event.subject for m in stored] == ["order-b"]


async def test_every_replicas_relay_is_notified_and_one_publishes(
    empty_outbox: None, nats_server: NatsServer
) -> None:
    if not on_postgres():
        pytest.skip("replicas share a database on PostgreSQL only")
    relays = [
        await start_relay(nats_server, poll_s=LONG_POLL_S),
        await start_relay(nats_server, poll_s=LONG_POLL_S),
    ]
    try:
        for _, relay in relays:
            await settled(relay)
        await record_changes("order-a", "created")
        await published_within(WAKE_BOUND_S, 1)

        async def both_notified() -> bool:
            return all(relay.listener.notifications == 1 for _, relay in relays)

        await eventually(both_notified, "both relays to be notified")
    finally:
        for link, relay in relays:
            await stop_relay(link, relay)

    stored = await read_stream(inspector(nats_server), "ORDERS")
    assert len(stored) == 1
    assert sorted(relay.stats.published for _, relay in relays) == [0, 1]


async def test_a_listener_cut_by_the_database_reconnects_and_wakes_the_relay_again(
    empty_outbox: None, nats_server: NatsServer
) -> None:
    if not on_postgres():
        pytest.skip("SQLite wakes its relay in process: no connection to lose")
    link, relay = await start_relay(nats_server, poll_s=LONG_POLL_S)
    try:
        await settled(relay)
        cut = relay.listener.server_pid
        await connections.get("default").execute_query("SELECT pg_terminate_backend($1)", [cut])

        async def listening_again() -> bool:
            return relay.listener.server_pid not in (None, cut)

        await eventually(listening_again, "the listener to reconnect")
        await record_changes("order-a", "created")
        await published_within(WAKE_BOUND_S, 1)
    finally:
        await stop_relay(link, relay)
    assert relay.healthy
