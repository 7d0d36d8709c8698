"""The shared durable consumer on a real nats-server: what it acks, drops and sees again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from api_devservers.nats_server import NatsServer
from api_shared.events.access import ORDERS_SERVICE, WEBHOOKS_DISPATCHER
from api_shared.events.consumer import DurableConsumer, cloud_event
from api_shared.events.envelope import MESSAGE_ID_HEADER, CloudEvent
from api_shared.events.link import NatsLink
from api_shared.events.streams import ORDERS, ensure_stream
from api_testkit.events import eventually, nats_client, running_nats_server

Handler = Callable[[CloudEvent], Awaitable[None]]


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    with running_nats_server(tmp_path / "nats") as server:
        yield server


def order_created(number: int) -> CloudEvent:
    return CloudEvent(
        source="/orders-service",
        type="orders.order.created",
        subject=f"order-{number}",
        data={"id": f"order-{number}"},
        sequence=1,
    )


async def publish(server: NatsServer, *bodies: tuple[bytes, str]) -> None:
    """Each (body, message id) on the ORDERS stream, made if it is not there yet, as its
    publisher (orders-service's NATS user) does."""
    async with nats_client(server.login(ORDERS_SERVICE.name)) as client:
        js = client.jetstream()
        await ensure_stream(js, ORDERS)
        for body, message_id in bodies:
            await js.publish(
                "orders.events.order.created", body, headers={MESSAGE_ID_HEADER: message_id}
            )


@asynccontextmanager
async def consuming(
    server: NatsServer,
    handler: Handler,
    *,
    before_start: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[DurableConsumer[CloudEvent]]:
    """A consumer of ORDERS' events, decoded as CloudEvents, running inside the block: the
    webhooks dispatcher's, as its NATS user."""
    link = NatsLink(server.login(WEBHOOKS_DISPATCHER.name))
    consumer = DurableConsumer(
        link,
        ORDERS,
        durable="webhooks-dispatcher-orders",
        subject="orders.events.>",
        decode=cloud_event,
        handler=handler,
        before_start=before_start,
    )
    await link.start()
    await consumer.start()
    try:
        yield consumer
    finally:
        await consumer.stop()
        await link.stop()


async def test_a_malformed_message_is_dropped_and_the_next_event_is_handled(
    nats_server: NatsServer,
) -> None:
    good = order_created(1)
    await publish(nats_server, (b"not an event", "junk"), (good.to_json(), good.id))
    handled: list[str] = []

    async def handle(event: CloudEvent) -> None:
        handled.append(event.id)

    async with consuming(nats_server, handle) as consumer:

        async def done() -> bool:
            return consumer.handled == 1

        await eventually(done, "the good event to be handled")

    assert handled == [good.id]  # the malformed message was not handed over, nor redelivered


async def test_an_event_whose_handler_failed_comes_back_and_is_handled(
    nats_server: NatsServer,
) -> None:
    event = order_created(2)
    await publish(nats_server, (event.to_json(), event.id))
    attempts: list[str] = []

    async def fail_once(received: CloudEvent) -> None:
        attempts.append(received.id)
        if len(attempts) == 1:
            raise RuntimeError("the database is away")

    async with consuming(nats_server, fail_once) as consumer:

        async def done() -> bool:
            return consumer.handled == 1

        await eventually(done, "the redelivered event to be handled")

    assert attempts == [event.id, event.id]


async def test_a_consumer_waits_for_its_stream_to_be_created_by_its_publisher(
    nats_server: NatsServer,
) -> None:
    handled: list[str] = []

    async def handle(received: CloudEvent) -> None:
        handled.append(received.id)

    async with consuming(nats_server, handle) as consumer:
        event = order_created(3)
        await publish(nats_server, (event.to_json(), event.id))  # the stream appears

        async def done() -> bool:
            return consumer.handled == 1

        await eventually(done, "the event published once its stream existed")

    assert handled == [event.id]


async def test_nothing_is_handled_before_the_consumer_is_let_start(
    nats_server: NatsServer,
) -> None:
    event = order_created(4)
    await publish(nats_server, (event.to_json(), event.id))
    steps: list[str] = []
    gate = asyncio.Event()

    async def until_let() -> None:
        await gate.wait()
        steps.append("let start")

    async def handle(received: CloudEvent) -> None:
        steps.append(received.id)

    async with consuming(nats_server, handle, before_start=until_let) as consumer:
        await asyncio.sleep(0.5)  # room for a consumer that would not wait to take the event
        gate.set()

        async def done() -> bool:
            return consumer.handled == 1

        await eventually(done, "the event once the consumer may start")

    assert steps == ["let start", event.id]
