"""docs/api.md#orders through the gateway, with real users, tokens, books and databases."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from api_testkit.actors import admin, customer
from api_testkit.catalog import book_ids
from api_testkit.orders import place
from api_testkit.stack import Stack


@pytest.mark.smoke
async def test_an_order_lives_from_creation_to_cancellation(gateway: httpx.AsyncClient) -> None:
    me, headers = await customer(gateway)
    books = await book_ids(gateway)

    created = await place(
        gateway, headers, items=[{"bookId": books[1], "quantity": 2}], note="gift"
    )
    order = created.json()["data"]
    read = await gateway.get(f"/orders/{order['id']}", headers=headers)
    replaced = await gateway.put(
        f"/orders/{order['id']}",
        json={"items": [{"bookId": books[0], "quantity": 3}]},
        headers=headers,
    )
    patched = await gateway.patch(
        f"/orders/{order['id']}",
        content=b'{"note": "wrapped"}',
        headers=headers | {"content-type": "application/merge-patch+json"},
    )
    cancelled = await gateway.patch(
        f"/orders/{order['id']}", json={"status": "cancelled"}, headers=headers
    )
    mine = await gateway.get("/orders", headers=headers)
    listed = await gateway.get(f"/users/{me['id']}/orders", headers=headers)

    assert created.status_code == 201
    assert created.headers["location"] == f"/orders/{order['id']}"
    assert order["userId"] == me["id"]
    assert order["status"] == "pending"
    assert order["items"] == [{"bookId": books[1], "quantity": 2}]
    assert read.json()["data"] == order
    assert read.headers["etag"]
    assert replaced.json()["data"]["note"] is None  # PUT replaces: an absent note is cleared
    assert patched.json()["data"]["note"] == "wrapped"
    assert cancelled.json()["data"]["status"] == "cancelled"
    assert mine.json()["page"]["total"] == 1
    assert [o["id"] for o in listed.json()["data"]] == [order["id"]]


@pytest.mark.smoke
async def test_unknown_books_are_422_naming_the_item(gateway: httpx.AsyncClient) -> None:
    _, headers = await customer(gateway)
    known = (await book_ids(gateway))[0]

    response = await place(
        gateway,
        headers,
        items=[{"bookId": known, "quantity": 1}, {"bookId": "no-such-book", "quantity": 1}],
    )

    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "UNKNOWN_BOOK"
    assert error["fields"] == {"items.1.bookId": "is not in the catalog"}
    assert (await gateway.get("/orders", headers=headers)).json()["page"]["total"] == 0


async def test_invalid_orders_name_every_bad_field(gateway: httpx.AsyncClient) -> None:
    _, headers = await customer(gateway)

    response = await gateway.post(
        "/orders",
        json={"items": [{"bookId": "b", "quantity": "2"}], "status": "shipped"},
        headers=headers,
    )

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_FAILED"
    assert any("quantity" in field for field in error["fields"])
    assert "status" in error["fields"]


@pytest.mark.smoke
async def test_someone_elses_order_is_403_and_a_missing_one_404(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    _, alice = await customer(gateway)
    _, bob = await customer(gateway)
    order = (await place(gateway, alice)).json()["data"]

    as_bob = await gateway.get(f"/orders/{order['id']}", headers=bob)
    delete_as_bob = await gateway.delete(f"/orders/{order['id']}", headers=bob)
    missing = await gateway.get(f"/orders/{uuid.uuid4()}", headers=alice)
    as_admin = await gateway.get(f"/orders/{order['id']}", headers=await admin(gateway, stack))

    assert as_bob.status_code == delete_as_bob.status_code == 403
    assert missing.status_code == 404
    assert as_admin.status_code == 200


async def test_only_admins_move_orders_forward_and_states_are_enforced(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    _, headers = await customer(gateway)
    boss = await admin(gateway, stack)
    order = (await place(gateway, headers)).json()["data"]
    path = f"/orders/{order['id']}"

    customer_confirms = await gateway.patch(path, json={"status": "confirmed"}, headers=headers)
    confirmed = await gateway.patch(path, json={"status": "confirmed"}, headers=boss)
    customer_edits = await gateway.patch(path, json={"note": "late"}, headers=headers)
    skipped = await gateway.patch(path, json={"status": "delivered"}, headers=boss)

    assert customer_confirms.status_code == 409
    assert confirmed.json()["data"]["status"] == "confirmed"
    assert customer_edits.status_code == 409
    assert skipped.status_code == 409
    assert skipped.json()["error"]["code"] == "INVALID_STATE"


async def test_twenty_concurrent_posts_with_one_idempotency_key_make_one_order(
    gateway: httpx.AsyncClient,
) -> None:
    _, headers = await customer(gateway)
    books = await book_ids(gateway)
    body = {"items": [{"bookId": books[0], "quantity": 1}]}
    keyed = headers | {"Idempotency-Key": uuid.uuid4().hex}

    responses = await asyncio.gather(
        *(gateway.post("/orders", json=body, headers=keyed) for _ in range(20))
    )
    statuses = [r.status_code for r in responses]
    replay = await gateway.post("/orders", json=body, headers=keyed)
    reused = await gateway.post(
        "/orders", json={"items": [{"bookId": books[0], "quantity": 2}]}, headers=keyed
    )

    assert set(statuses) <= {201, 409}
    assert 201 in statuses
    created_ids = {r.json()["data"]["id"] for r in responses if r.status_code == 201}
    assert len(created_ids) == 1
    assert replay.status_code == 201
    assert replay.json()["data"]["id"] in created_ids
    assert reused.status_code == 422
    assert reused.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert (await gateway.get("/orders", headers=headers)).json()["page"]["total"] == 1


async def test_a_stale_if_match_is_412_and_changes_nothing(gateway: httpx.AsyncClient) -> None:
    _, headers = await customer(gateway)
    created = await place(gateway, headers, note="first")
    order, etag = created.json()["data"], created.headers["etag"]
    path = f"/orders/{order['id']}"

    updated = await gateway.patch(
        path, json={"note": "second"}, headers=headers | {"If-Match": etag}
    )
    stale = await gateway.patch(path, json={"note": "third"}, headers=headers | {"If-Match": etag})

    assert updated.status_code == 200
    assert updated.headers["etag"] != etag
    assert stale.status_code == 412
    assert stale.json()["error"]["code"] == "PRECONDITION_FAILED"
    assert (await gateway.get(path, headers=headers)).json()["data"]["note"] == "second"


@pytest.mark.needs(orders_service="1.1.0")  # output-only fields sent back came with 1.1.0
async def test_a_get_body_edited_and_put_back_with_its_etag_is_a_replace(
    gateway: httpx.AsyncClient,
) -> None:
    _, headers = await customer(gateway)
    books = await book_ids(gateway)
    created = await place(gateway, headers, note="first")
    path = f"/orders/{created.json()['data']['id']}"
    read = await gateway.get(path, headers=headers)
    order = read.json()["data"]

    edited = await gateway.put(
        path,
        json={**order, "items": [{"bookId": books[2], "quantity": 4}]},
        headers=headers | {"If-Match": read.headers["etag"]},
    )
    moved = await gateway.put(
        path,
        json={**edited.json()["data"], "status": "cancelled"},
        headers=headers | {"If-Match": edited.headers["etag"]},
    )

    assert edited.status_code == 200, edited.text
    assert edited.json()["data"] == {
        **order,
        "items": [{"bookId": books[2], "quantity": 4}],
        "updatedAt": edited.json()["data"]["updatedAt"],
    }
    assert edited.headers["etag"] != read.headers["etag"]
    assert moved.status_code == 400
    assert set(moved.json()["error"]["fields"]) == {"status"}
    after = await gateway.get(path, headers=headers)
    assert after.json()["data"] == edited.json()["data"]
    assert after.headers["etag"] == edited.headers["etag"]


async def test_an_empty_if_match_is_400_through_the_gateway_and_changes_nothing(
    gateway: httpx.AsyncClient,
) -> None:
    _, headers = await customer(gateway)
    created = await place(gateway, headers, note="first")
    path = f"/orders/{created.json()['data']['id']}"

    patched = await gateway.patch(path, json={"note": "second"}, headers=headers | {"If-Match": ""})
    deleted = await gateway.delete(path, headers=headers | {"If-Match": ""})

    for refused in (patched, deleted):
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == "VALIDATION_FAILED"
        assert set(refused.json()["error"]["fields"]) == {"If-Match"}
    after = await gateway.get(path, headers=headers)
    assert after.json()["data"]["note"] == "first"
    assert after.headers["etag"] == created.headers["etag"]


async def test_an_admin_asking_for_the_orders_of_nobody_gets_404(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    _, headers = await customer(gateway)

    as_admin = await gateway.get(
        f"/users/{uuid.uuid4()}/orders", headers=await admin(gateway, stack)
    )
    as_customer = await gateway.get(f"/users/{uuid.uuid4()}/orders", headers=headers)

    assert as_admin.status_code == 404
    assert as_customer.status_code == 403


@pytest.mark.processes  # stops books-graphql (tests/compose does it to containers)
async def test_with_the_catalog_down_an_order_is_503_and_nothing_is_written(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    _, headers = await customer(gateway)
    books = await book_ids(gateway)
    stack.services["books"].stop()
    try:
        response = await gateway.post(
            "/orders", json={"items": [{"bookId": books[0], "quantity": 1}]}, headers=headers
        )
        orders = await gateway.get("/orders", headers=headers)
    finally:
        stack.services["books"].start()
        stack.wait_ready("books")

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "UNAVAILABLE"
    assert response.headers["retry-after"]
    assert orders.json()["page"]["total"] == 0
