"""Every change of an order records its event, and the relay puts them on JetStream in order;
a deleted user's orders are deleted by the consumer of users' events."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import httpx
import jsonschema_rs
import orjson

from api_devservers.nats_server import NatsServer
from api_shared.events.access import USERS_SERVICE
from api_shared.events.envelope import CONTENT_TYPE, CloudEvent
from api_shared.events.models import OutboxEvent
from api_shared.events.runtime import Events
from api_shared.events.streams import USERS, ensure_stream
from api_shared.types import App
from api_testkit.actors import PASSWORD
from api_testkit.asyncapi import message_schema
from api_testkit.callers import Caller
from api_testkit.events import eventually, inspector, nats_client, read_stream
from orders_service.events import CATALOG
from orders_service.models import Order

NewOrder = Callable[..., Awaitable[httpx.Response]]


async def recorded(order_id: str) -> list[dict[str, object]]:
    rows = await OutboxEvent.filter(subject=order_id).order_by("sequence")
    return [orjson.loads(row.document) for row in rows]


async def on_the_stream(server: NatsServer, order_id: str) -> list[CloudEvent]:
    stored = await read_stream(inspector(server), "ORDERS")
    return [m.event for m in stored if m.event.subject == order_id]


async def test_an_orders_life_is_on_the_stream_as_exactly_its_events_in_order(
    client: httpx.AsyncClient,
    new_order: NewOrder,
    customer: Caller,
    admin: Caller,
    nats_server: NatsServer,
) -> None:
    created = (await new_order(customer)).json()["data"]
    order_id = created["id"]
    bodies = [created]
    for status in ("confirmed", "shipped", "delivered"):
        response = await client.patch(
            f"/orders/{order_id}", json={"status": status}, headers=admin.headers
        )
        bodies.append(response.json()["data"])

    async def all_four_published() -> bool:
        return len(await on_the_stream(nats_server, order_id)) == 4

    await eventually(all_four_published, "the order's four events on the stream")
    events = await on_the_stream(nats_server, order_id)
    assert [e.type for e in events] == [
        "orders.order.created",
        "orders.order.confirmed",
        "orders.order.shipped",
        "orders.order.delivered",
    ]
    assert [e.sequence for e in events] == [1, 2, 3, 4]
    assert [dict(e.data) for e in events] == bodies
    assert {e.source for e in events} == {"/orders-service"}


async def test_the_relay_reports_what_it_published_on_metrics(
    client: httpx.AsyncClient, new_order: NewOrder, customer: Caller
) -> None:
    order_id = (await new_order(customer)).json()["data"]["id"]

    async def published() -> bool:
        return not await OutboxEvent.filter(subject=order_id, published_at=None).exists()

    await eventually(published, "the order's event to be published")
    metrics = (await client.get("/metrics")).text
    assert "outbox_relay_up 1.0" in metrics
    assert "outbox_oldest_unpublished_age_seconds" in metrics
    (published_line,) = [
        line for line in metrics.splitlines() if line.startswith("outbox_published_total ")
    ]
    assert float(published_line.split()[1]) >= 1


async def test_edits_cancellation_and_deletion_are_named_by_what_they_did(
    client: httpx.AsyncClient, new_order: NewOrder, customer: Caller, books: list[str]
) -> None:
    order_id = (await new_order(customer)).json()["data"]["id"]
    url = f"/orders/{order_id}"
    replace = {"items": [{"bookId": books[1], "quantity": 1}], "note": None}
    await client.put(url, json=replace, headers=customer.headers)
    await client.patch(url, json={"note": "ring twice"}, headers=customer.headers)
    cancelled = await client.patch(url, json={"status": "cancelled"}, headers=customer.headers)
    await client.delete(url, headers=customer.headers)

    events = await recorded(order_id)
    assert [e["type"] for e in events] == [
        "orders.order.created",
        "orders.order.replaced",
        "orders.order.patched",
        "orders.order.cancelled",
        "orders.order.deleted",
    ]
    # A deletion carries the order as it was when deleted.
    assert events[-1]["data"] == cancelled.json()["data"]


async def test_a_refused_change_records_no_event(
    client: httpx.AsyncClient, new_order: NewOrder, customer: Caller
) -> None:
    order_id = (await new_order(customer)).json()["data"]["id"]

    refused = await client.patch(
        f"/orders/{order_id}", json={"status": "shipped"}, headers=customer.headers
    )
    unchanged = await client.patch(
        f"/orders/{order_id}", json={"status": "pending"}, headers=customer.headers
    )

    assert (refused.status_code, unchanged.status_code) == (409, 200)
    assert [e["type"] for e in await recorded(order_id)] == ["orders.order.created"]


async def publish_user_deleted(
    server: NatsServer, user_id: str, *, message_id: str | None = None
) -> None:
    """What users-service's relay publishes when a user is deleted, as its NATS user: to
    stage what the real one does not do on demand (a redelivery, an event while the consumer
    is down)."""
    event = CloudEvent(
        source="/users-service", type="users.user.deleted", subject=user_id, data={"id": user_id}
    )
    async with nats_client(server.login(USERS_SERVICE.name)) as client:
        js = client.jetstream()
        await ensure_stream(js, USERS)
        await js.publish(
            event.nats_subject,
            event.to_json(),
            headers={"Nats-Msg-Id": message_id or event.id, "Content-Type": CONTENT_TYPE},
        )


async def test_a_deleted_users_orders_are_deleted_each_with_its_event(
    new_order: NewOrder,
    customer: Caller,
    other_customer: Caller,
    users_api: httpx.AsyncClient,
) -> None:
    mine = [(await new_order(customer)).json()["data"]["id"] for _ in range(3)]
    kept = (await new_order(other_customer)).json()["data"]["id"]

    # The customer closes their account; users-service's relay says so on the stream.
    deleted = await users_api.request(
        "DELETE",
        f"/api/users/{customer.id}",
        json={"currentPassword": PASSWORD},
        headers=customer.headers,
    )
    assert deleted.status_code == 204, deleted.text

    async def none_left() -> bool:
        return not await Order.filter(user_id=customer.id).exists()

    await eventually(none_left, "the deleted user's orders to be deleted")
    assert await Order.filter(id=kept).exists()
    for order_id in mine:
        assert [e["type"] for e in await recorded(order_id)][-1] == "orders.order.deleted"


async def test_a_redelivered_user_deletion_changes_nothing_twice(
    app: App, new_order: NewOrder, customer: Caller, nats_server: NatsServer
) -> None:
    order_id = (await new_order(customer)).json()["data"]["id"]
    events: Events = app.ctx.context.events
    (consumer,) = events.consumers
    before = consumer.handled

    def handled(count: int) -> Callable[[], Awaitable[bool]]:
        async def check() -> bool:
            return consumer.handled >= before + count

        return check

    await publish_user_deleted(nats_server, customer.id)
    await eventually(handled(1), "the deletion to be handled")
    # The same event again, as a redelivery would bring it (a new message to JetStream).
    await publish_user_deleted(nats_server, customer.id, message_id=str(uuid.uuid4()))
    await eventually(handled(2), "the repeat to be handled")

    assert [e["type"] for e in await recorded(order_id)] == [
        "orders.order.created",
        "orders.order.deleted",
    ]


async def test_a_deletion_published_while_the_consumer_was_down_is_caught_up_on_its_return(
    app: App, new_order: NewOrder, customer: Caller, nats_server: NatsServer
) -> None:
    events: Events = app.ctx.context.events
    (consumer,) = events.consumers
    order_id = (await new_order(customer)).json()["data"]["id"]
    await consumer.stop()
    try:
        await publish_user_deleted(nats_server, customer.id)
        assert await Order.filter(id=order_id).exists()
    finally:
        await consumer.start()

    async def gone() -> bool:
        return not await Order.filter(id=order_id).exists()

    await eventually(gone, "the durable consumer to catch up")


async def test_every_event_an_orders_life_records_is_described_by_the_served_asyncapi(
    client: httpx.AsyncClient,
    new_order: NewOrder,
    customer: Caller,
    admin: Caller,
    books: list[str],
) -> None:
    shipped = (await new_order(customer)).json()["data"]["id"]
    for status in ("confirmed", "shipped", "delivered"):
        await client.patch(f"/orders/{shipped}", json={"status": status}, headers=admin.headers)
    edited = (await new_order(customer)).json()["data"]["id"]
    url = f"/orders/{edited}"
    await client.put(
        url, json={"items": [{"bookId": books[1], "quantity": 1}]}, headers=customer.headers
    )
    await client.patch(url, json={"note": "ring twice"}, headers=customer.headers)
    await client.patch(url, json={"status": "cancelled"}, headers=customer.headers)
    await client.delete(url, headers=customer.headers)

    served = await client.get("/docs/asyncapi.json")

    assert served.status_code == 200
    document = served.json()
    events = [*await recorded(shipped), *await recorded(edited)]
    assert {e["type"] for e in events} == set(CATALOG.types)  # the life covers every type
    for event in events:
        validator = jsonschema_rs.validator_for(message_schema(document, str(event["type"])))
        assert validator.is_valid(event), (event, list(validator.iter_errors(event)))
