"""``GET /orders/{id}/events``: an order's event history from the outbox, for a receiver that
saw a gap in ``sequence``, on the real database (SQLite, or PostgreSQL with
``TEST_DATABASE_URL``) with the real relay publishing meanwhile."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import orjson

from api_shared.events.models import OutboxEvent
from api_testkit.callers import Caller

NewOrder = Callable[..., Awaitable[httpx.Response]]

CHANGES = [
    {"note": "ring twice"},
    {"status": "confirmed"},
    {"note": "leave at the door"},
    {"status": "shipped"},
    {"status": "delivered"},
]
TYPES = [
    "orders.order.created",
    "orders.order.patched",
    "orders.order.confirmed",
    "orders.order.patched",
    "orders.order.shipped",
    "orders.order.delivered",
]


async def a_long_life(
    client: httpx.AsyncClient, new_order: NewOrder, owner: Caller, admin: Caller
) -> tuple[str, list[dict[str, Any]]]:
    """An order of ``owner`` through six changes; its id and the bodies each change answered."""
    created = (await new_order(owner)).json()["data"]
    bodies = [created]
    for change in CHANGES:
        response = await client.patch(
            f"/orders/{created['id']}", json=change, headers=admin.headers
        )
        assert response.status_code == 200, response.text
        bodies.append(response.json()["data"])
    return created["id"], bodies


async def events(
    client: httpx.AsyncClient, order_id: str, caller: Caller, **query: int
) -> httpx.Response:
    return await client.get(f"/orders/{order_id}/events", params=query, headers=caller.headers)


async def test_the_history_is_every_event_in_sequence_order_as_published(
    client: httpx.AsyncClient, new_order: NewOrder, customer: Caller, admin: Caller
) -> None:
    order_id, bodies = await a_long_life(client, new_order, customer, admin)

    response = await events(client, order_id, customer, after=0)

    assert response.status_code == 200, response.text
    history = response.json()
    assert [e["sequence"] for e in history["data"]] == [1, 2, 3, 4, 5, 6]
    assert [e["type"] for e in history["data"]] == TYPES
    assert [e["data"] for e in history["data"]] == bodies
    assert len({e["id"] for e in history["data"]}) == 6
    assert {(e["subject"], e["source"]) for e in history["data"]} == {(order_id, "/orders-service")}
    # Exactly the documents the relay publishes (and webhooks deliver), attribute for attribute.
    stored = await OutboxEvent.filter(subject=order_id).order_by("sequence")
    assert history["data"] == [orjson.loads(row.document) for row in stored]
    assert history["page"] == {"after": 0, "limit": 100, "next": 6, "hasMore": False}


async def test_after_n_gives_exactly_the_events_past_n(
    client: httpx.AsyncClient, new_order: NewOrder, customer: Caller, admin: Caller
) -> None:
    order_id, _ = await a_long_life(client, new_order, customer, admin)
    everything = (await events(client, order_id, customer)).json()["data"]

    after_two = (await events(client, order_id, customer, after=2)).json()
    after_all = (await events(client, order_id, customer, after=6)).json()

    assert [e["sequence"] for e in after_two["data"]] == [3, 4, 5, 6]
    assert after_two["data"] == everything[2:]
    assert after_all == {
        "data": [],
        "page": {"after": 6, "limit": 100, "next": None, "hasMore": False},
    }


async def test_pages_follow_one_another_through_next_without_a_gap_or_a_repeat(
    client: httpx.AsyncClient, new_order: NewOrder, customer: Caller, admin: Caller
) -> None:
    order_id, _ = await a_long_life(client, new_order, customer, admin)

    seen: list[int] = []
    pages: list[dict[str, Any]] = []
    after = 0
    while True:
        page = (await events(client, order_id, customer, after=after, limit=4)).json()
        pages.append(page["page"])
        seen += [e["sequence"] for e in page["data"]]
        if not page["page"]["hasMore"]:
            break
        after = page["page"]["next"]

    assert seen == [1, 2, 3, 4, 5, 6]
    assert pages == [
        {"after": 0, "limit": 4, "next": 4, "hasMore": True},
        {"after": 4, "limit": 4, "next": 6, "hasMore": False},
    ]
    over = (await events(client, order_id, customer, limit=500)).json()["page"]
    under = (await events(client, order_id, customer, limit=0)).json()
    assert over["limit"] == 100
    assert (under["page"]["limit"], len(under["data"])) == (1, 1)


async def test_only_the_owner_and_admins_read_an_orders_history(
    client: httpx.AsyncClient,
    new_order: NewOrder,
    customer: Caller,
    other_customer: Caller,
    admin: Caller,
) -> None:
    order_id = (await new_order(customer)).json()["data"]["id"]

    someone_else = await events(client, order_id, other_customer)
    admins = await events(client, order_id, admin)
    anonymous = await client.get(f"/orders/{order_id}/events")

    assert someone_else.status_code == 403, someone_else.text
    assert someone_else.json()["error"]["code"] == "FORBIDDEN"
    assert admins.status_code == 200, admins.text
    assert [e["type"] for e in admins.json()["data"]] == ["orders.order.created"]
    assert anonymous.status_code == 401


async def test_no_such_order_or_a_deleted_one_has_no_history(
    client: httpx.AsyncClient, new_order: NewOrder, customer: Caller, admin: Caller
) -> None:
    order_id = (await new_order(customer)).json()["data"]["id"]
    deleted = await client.delete(f"/orders/{order_id}", headers=customer.headers)

    answers = [
        await events(client, order_id, customer),
        await events(client, order_id, admin),
        await events(client, "7c9e6679-7425-40de-944b-e07fc1f90ae7", admin),
        await events(client, "not-an-id", admin),
    ]

    assert deleted.status_code == 204
    for answer in answers:
        assert answer.status_code == 404, answer.text
        assert answer.json()["error"]["code"] == "NOT_FOUND"
    # The rows stay until the retention ends; only the route no longer shows them.
    assert await OutboxEvent.filter(subject=order_id).count() == 2


async def test_bad_parameters_are_refused_as_on_every_list(
    client: httpx.AsyncClient, new_order: NewOrder, customer: Caller
) -> None:
    order_id = (await new_order(customer)).json()["data"]["id"]
    url = f"/orders/{order_id}/events"

    refusals = {
        query: await client.get(f"{url}?{query}", headers=customer.headers)
        for query in ("after=-1", "after=x", "after=", "limit=many", "offset=2", "sort=sequence")
    }

    assert {q: r.status_code for q, r in refusals.items()} == dict.fromkeys(refusals, 400)
    codes = {q: r.json()["error"]["code"] for q, r in refusals.items()}
    assert codes == {
        "after=-1": "VALIDATION_FAILED",
        "after=x": "VALIDATION_FAILED",
        "after=": "VALIDATION_FAILED",
        "limit=many": "VALIDATION_FAILED",
        "offset=2": "BAD_FILTER",
        "sort=sequence": "BAD_FILTER",
    }
    assert refusals["after=-1"].json()["error"]["fields"] == {"after": "must be at least 0"}
