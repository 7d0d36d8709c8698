"""nats-server dies (SIGKILL) while orders move through their lives, and starts again on its
store a couple of seconds later: docs/api.md#events and #webhooks hold through it.

Orders are placed, confirmed, shipped and delivered before the kill, while the broker is
away (their events wait in the outbox) and after it is back. Then every event reaches a
registered endpoint, signed, each order's in order; a repeat of an event carries the same
``webhook-id`` (at least once, de-duplicated by the receiver), never another one; and the
``ORDERS`` stream holds each event exactly once (the relay republishes what it could not
mark, and ``Nats-Msg-Id`` makes the repeat a no-op). Repeats are counted and reported.

It runs on the faults suite's stack (``fault_bench``), not the session-shared one of the
other end-to-end tests: killing the broker there would disturb every test that reads events
at the time, while this suite exists to break its own stack one scenario at a time. Sharing
the bench with the other scenarios costs no second stack start; the endpoint is deleted at
the end, so later scenarios' orders are not queued for a receiver that is gone.
"""

from __future__ import annotations

import asyncio
import signal
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from standardwebhooks import Webhook, WebhookVerificationError

from api_testkit.actors import admin
from api_testkit.events import StoredMessage, eventually, read_stream
from api_testkit.orders import place
from api_testkit.stack import Stack
from api_testkit.webhooks import Receipt, WebhookReceiver, webhook_receiver

from .conftest import FaultBench

LIFE = tuple(
    f"orders.order.{change}" for change in ("created", "confirmed", "shipped", "delivered")
)
STATUSES = ("confirmed", "shipped", "delivered")
LIVES_AT_ONCE = 3  # several at once: the broker dies with events in flight
KILL_AFTER = 6  # order lives over when the broker is killed
LIVES_AWAY = 12  # order lives begun while it is away, at most (their events wait)
LIVES_AFTER = 3  # order lives begun once it is back
BROKER_AWAY_S = 2.0


def of(hook: WebhookReceiver, orders: set[str]) -> list[Receipt]:
    """What the receiver got about these orders, in arrival order, repeats included."""
    return [r for r in hook.received["hook"] if r.event.get("subject") in orders]


@asynccontextmanager
async def endpoint(
    gateway: httpx.AsyncClient, headers: dict[str, str], url: str
) -> AsyncIterator[dict[str, Any]]:
    """An endpoint for every order event, deleted afterwards."""
    created = await gateway.post(
        "/api/webhooks", json={"url": url, "eventTypes": ["orders.order.*"]}, headers=headers
    )
    assert created.status_code == 201, created.text
    registered: dict[str, Any] = created.json()["data"]
    try:
        yield registered
    finally:
        await gateway.delete(f"/api/webhooks/{registered['id']}", headers=headers)


@dataclass
class Run:
    """Order lives driven through the broker's loss: each order's id, by the phase it began in
    (``before`` the kill, while the broker was ``away``, once it was ``back``)."""

    gateway: httpx.AsyncClient
    customer: dict[str, str]
    admin: dict[str, str]
    book: str
    phase: str = "before"
    begins: list[str] = field(default_factory=list)  # the phase of each life begun
    orders: dict[str, str] = field(default_factory=dict)
    lives_over: asyncio.Event = field(default_factory=asyncio.Event)
    lived_while_away: asyncio.Event = field(default_factory=asyncio.Event)
    back: asyncio.Event = field(default_factory=asyncio.Event)

    async def drive(self) -> None:
        """Lives one after another, until ``LIVES_AFTER`` have begun with the broker back."""
        while self.begun("back") < LIVES_AFTER:
            if self.phase == "away" and self.begun("away") >= LIVES_AWAY:
                await self.back.wait()
            phase = self.phase
            self.begins.append(phase)
            self.orders[await self.live()] = phase
            if len(self.orders) >= KILL_AFTER:
                self.lives_over.set()
            if phase == "away":
                self.lived_while_away.set()

    def begun(self, phase: str) -> int:
        return self.begins.count(phase)

    async def live(self) -> str:
        """One order placed, confirmed, shipped and delivered; its id."""
        placed = await place(
            self.gateway, self.customer, items=[{"bookId": self.book, "quantity": 1}]
        )
        assert placed.status_code == 201, placed.text
        order_id: str = placed.json()["data"]["id"]
        for status in STATUSES:
            changed = await self.gateway.patch(
                f"/orders/{order_id}", json={"status": status}, headers=self.admin
            )
            assert changed.status_code == 200, changed.text
        return order_id

    async def kill_broker(self, stack: Stack) -> None:
        """SIGKILL nats-server once ``KILL_AFTER`` lives are over; start it again on its store
        ``BROKER_AWAY_S`` later, and once a whole life went through without it (also when
        cancelled: the next scenario needs it)."""
        assert stack.broker is not None
        await self.lives_over.wait()
        try:
            code = await asyncio.to_thread(stack.broker.stop, signal.SIGKILL)
            self.phase = "away"
            assert code == -signal.SIGKILL, stack.broker.log_tail()
            await asyncio.sleep(BROKER_AWAY_S)
            # Bounded: a request that fails or hangs fails its drive, which cancels this.
            await self.lived_while_away.wait()
        finally:
            stack.broker.start()
            await asyncio.to_thread(stack.wait_broker)
            self.phase = "back"
            self.back.set()


def events_by_webhook_id(receipts: Sequence[Receipt], secret: str) -> dict[str, dict[str, Any]]:
    """Each event received, by webhook-id, in order of first arrival; every POST (repeats
    included) verified, and a repeat checked to be the same body."""
    verifier = Webhook(secret)
    unverified: list[str] = []
    bodies: dict[str, set[bytes]] = defaultdict(set)
    events: dict[str, dict[str, Any]] = {}
    for receipt in receipts:
        try:
            event = verifier.verify(receipt.body, receipt.headers)
        except WebhookVerificationError as error:
            unverified.append(f"{receipt.webhook_id}: {error}")
            continue
        assert event["id"] == receipt.webhook_id
        bodies[receipt.webhook_id].add(receipt.body)
        events.setdefault(receipt.webhook_id, event)
    assert not unverified, unverified
    assert {i: len(b) for i, b in bodies.items() if len(b) > 1} == {}, "a repeat that differs"
    return events


def check_each_event_once_and_in_order(
    events: Mapping[str, Mapping[str, Any]], orders: set[str]
) -> None:
    """One webhook-id per (order, sequence), all four of every order, each in its order."""
    ids_of: dict[tuple[str, int], set[str]] = defaultdict(set)
    arrived: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for webhook_id, event in events.items():
        ids_of[(event["subject"], event["sequence"])].add(webhook_id)
        arrived[event["subject"]].append((event["sequence"], event["type"]))
    expected = {(order, sequence) for order in orders for sequence in range(1, len(LIFE) + 1)}
    assert sorted(set(ids_of) - expected) == [], "events nobody made"
    assert sorted(expected - set(ids_of)) == [], "events lost"
    assert {key: ids for key, ids in ids_of.items() if len(ids) > 1} == {}, "two ids, one event"
    life = list(enumerate(LIFE, start=1))
    assert {order: seen for order, seen in arrived.items() if seen != life} == {}


def check_once_on_the_stream(stored: Sequence[StoredMessage], received: set[str]) -> None:
    """Each event exactly once on the stream, under its own ``Nats-Msg-Id``."""
    copies = Counter(m.event.id for m in stored)
    assert {event_id: n for event_id, n in copies.items() if n > 1} == {}
    assert [m for m in stored if m.message_id != m.event.id] == []
    assert sorted(received - set(copies)) == [], "received, yet not on the stream"
    assert sorted(set(copies) - received) == [], "on the stream, never received"


async def relay_counters(stack: Stack) -> dict[str, float]:
    """orders-service's relay counters (failed rounds, republications dropped) on /metrics."""
    async with httpx.AsyncClient(timeout=5.0) as client:
        text = (await client.get(f"{stack.services['orders'].admin_url}/metrics")).text
    wanted = ("outbox_relay_failures", "outbox_publish_duplicates")
    counters: dict[str, float] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        for counter in wanted:
            if name in (counter, f"{counter}_total"):
                counters[counter] = float(value)
    assert set(counters) == set(wanted), text
    return counters


async def test_no_event_is_lost_or_doubled_when_the_broker_is_killed_mid_run(
    fault_bench: FaultBench,
) -> None:
    stack = fault_bench.stack
    before = await relay_counters(stack)
    async with (
        httpx.AsyncClient(base_url=stack.gateway_url, timeout=15.0) as gateway,
        webhook_receiver() as hook,
    ):
        admin_headers = await admin(gateway, stack)
        async with endpoint(gateway, admin_headers, hook.url()) as registered:
            run = Run(
                gateway, fault_bench.customers[0].headers, admin_headers, fault_bench.book_ids[0]
            )
            # A failing life cancels the kill, which then brings the broker back all the same.
            async with asyncio.TaskGroup() as group:
                group.create_task(run.kill_broker(stack))
                for _ in range(LIVES_AT_ONCE):
                    group.create_task(run.drive())
            orders = set(run.orders)

            async def all_received() -> bool:
                return len({r.webhook_id for r in of(hook, orders)}) >= len(LIFE) * len(orders)

            await eventually(all_received, f"{len(LIFE) * len(orders)} events at the receiver")
            receipts = of(hook, orders)
            events = events_by_webhook_id(receipts, registered["secret"])
            check_each_event_once_and_in_order(events, orders)
            stream = await read_stream(stack.nats_login(), "ORDERS")
            stored = [m for m in stream if m.event.subject in orders]
            check_once_on_the_stream(stored, set(events))

    # Not asserted: a publish under way when the broker died may wait for it to come back
    # (nats-py holds it while reconnecting), so a short outage can cost the relay no round.
    after = await relay_counters(stack)
    failed_rounds = after["outbox_relay_failures"] - before["outbox_relay_failures"]
    phases = Counter(run.orders.values())
    dropped = after["outbox_publish_duplicates"] - before["outbox_publish_duplicates"]
    fault_bench.reports.append(
        "nats-server SIGKILLed and started again: order lives begun "
        f"{phases['before']} before, {phases['away']} while away, {phases['back']} after; "
        f"{len(events)} distinct events received, {len(receipts) - len(events)} repeated "
        f"deliveries (same webhook-id); stream: {len(stored)} messages, no duplicate; "
        f"relay: {failed_rounds:.0f} failed rounds, {dropped:.0f} republications dropped "
        "by JetStream"
    )
