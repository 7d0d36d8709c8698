"""The orders API over real HTTP, real tokens, a real database and real neighbours: lifecycle and
error rows."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import httpx
import pytest

from api_testkit.callers import Caller
from api_testkit.gates import Gate
from api_testkit.tokens import TestSigner
from orders_service.models import Order

NewOrder = Callable[..., Awaitable[httpx.Response]]


async def test_an_order_lives_from_creation_through_edits_and_cancellation_to_deletion(
    client: httpx.AsyncClient, customer: Caller, books: list[str]
) -> None:
    created = await client.post(
        "/orders",
        json={"items": [{"bookId": books[0], "quantity": 2}], "note": "gift wrap"},
        headers=customer.headers,
    )
    assert created.status_code == 201
    order = created.json()["data"]
    assert order["userId"] == customer.id
    assert order["status"] == "pending"
    assert order["items"] == [{"bookId": books[0], "quantity": 2}]
    assert order["note"] == "gift wrap"
    assert order["createdAt"].endswith("Z")
    assert order["updatedAt"] == order["createdAt"]
    assert created.headers["location"] == f"/orders/{order['id']}"
    assert created.headers["etag"] == f'"{order["id"]}-1"'
    url = created.headers["location"]

    read = await client.get(url, headers=customer.headers)
    assert read.status_code == 200
    assert read.json() == {"data": order}
    assert read.headers["etag"] == created.headers["etag"]

    replaced = await client.put(
        url, json={"items": [{"bookId": books[1], "quantity": 1}]}, headers=customer.headers
    )
    assert replaced.status_code == 200
    assert replaced.json()["data"]["items"] == [{"bookId": books[1], "quantity": 1}]
    assert replaced.json()["data"]["note"] is None  # PUT: an absent note becomes null
    assert replaced.headers["etag"] == f'"{order["id"]}-2"'

    patched = await client.patch(
        url,
        content=b'{"note": "leave at the door"}',
        headers={**customer.headers, "Content-Type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200
    assert patched.json()["data"]["note"] == "leave at the door"
    assert patched.json()["data"]["items"] == [{"bookId": books[1], "quantity": 1}]

    cancelled = await client.patch(url, json={"status": "cancelled"}, headers=customer.headers)
    assert cancelled.status_code == 200
    assert cancelled.json()["data"]["status"] == "cancelled"
    assert cancelled.headers["etag"] == f'"{order["id"]}-4"'

    deleted = await client.delete(url, headers=customer.headers)
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert (await client.get(url, headers=customer.headers)).status_code == 404
    assert (await client.delete(url, headers=customer.headers)).status_code == 404


async def test_two_posts_without_a_key_create_two_orders(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder
) -> None:
    first = (await new_order(customer)).json()["data"]
    second = (await new_order(customer)).json()["data"]

    assert first["id"] != second["id"]
    listed = await client.get("/orders", headers=customer.headers)
    assert listed.json()["page"]["total"] == 2


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/orders"),
        ("POST", "/orders"),
        ("GET", f"/orders/{uuid.uuid4()}"),
        ("PUT", f"/orders/{uuid.uuid4()}"),
        ("PATCH", f"/orders/{uuid.uuid4()}"),
        ("DELETE", f"/orders/{uuid.uuid4()}"),
        ("GET", f"/users/{uuid.uuid4()}/orders"),
    ],
)
async def test_every_endpoint_without_a_token_is_401_with_a_bearer_challenge(
    client: httpx.AsyncClient, method: str, path: str
) -> None:
    response = await client.request(method, path, json={"items": []})

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHENTICATED"
    assert response.headers["www-authenticate"] == "Bearer"


async def test_a_bad_expired_or_foreign_token_is_401(
    client: httpx.AsyncClient, customer: Caller
) -> None:
    stranger = TestSigner().token(customer.id)
    for token in ("not-a-jwt", stranger, customer.token[:-4] + "AAAA"):
        response = await client.get("/orders", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "UNAUTHENTICATED"


async def test_a_token_whose_subject_is_not_a_user_id_is_401(
    client: httpx.AsyncClient, signer: TestSigner
) -> None:
    token = signer.token("not-a-uuid")  # signed with users-service's own key
    control = signer.token(str(uuid.uuid4()))

    response = await client.get("/orders", headers={"Authorization": f"Bearer {token}"})
    accepted = await client.get("/orders", headers={"Authorization": f"Bearer {control}"})

    assert response.status_code == 401
    assert accepted.status_code == 200  # the key is trusted: the subject alone is refused


async def test_unknown_and_malformed_order_ids_are_not_found(
    client: httpx.AsyncClient, customer: Caller, books: list[str]
) -> None:
    for order_id in (str(uuid.uuid4()), "not-a-uuid", "1"):
        for method in ("GET", "PUT", "PATCH", "DELETE"):
            body = {"items": [{"bookId": books[0], "quantity": 1}]}
            response = await client.request(
                method, f"/orders/{order_id}", json=body, headers=customer.headers
            )
            assert response.status_code == 404, (method, order_id)
            assert response.json()["error"]["code"] == "NOT_FOUND"


async def test_missing_items_is_400_naming_the_field(
    client: httpx.AsyncClient, customer: Caller
) -> None:
    response = await client.post("/orders", json={"note": "x"}, headers=customer.headers)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "VALIDATION_FAILED"
    assert response.json()["error"]["fields"] == {"items": "is required"}


async def test_every_invalid_field_is_named_at_once_wrong_types_included(
    client: httpx.AsyncClient, customer: Caller
) -> None:
    body = {
        "items": [
            {"bookId": "book-1", "quantity": "2"},
            {"bookId": 7, "quantity": 0},
            {"bookId": "book-3", "quantity": 1, "price": 3},
            {"quantity": 1.0},
        ],
        "note": "x" * 501,
        "colour": "red",
    }

    response = await client.post("/orders", json=body, headers=customer.headers)

    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {
        "items.0.quantity": "must be an integer",
        "items.1.bookId": "must be a string",
        "items.1.quantity": "must be between 1 and 100",
        "items.2.price": "is not allowed",
        "items.3.bookId": "is required",
        "items.3.quantity": "must be an integer",
        "note": "must be at most 500 characters",
        "colour": "is not allowed",
    }


async def test_items_must_number_1_to_50_with_each_book_once(
    client: httpx.AsyncClient, customer: Caller
) -> None:
    many = [{"bookId": f"book-{n}", "quantity": 1} for n in range(51)]
    twice = [{"bookId": "book-1", "quantity": 1}, {"bookId": "book-1", "quantity": 2}]

    for items, fields in (
        ([], {"items": "must have 1 to 50 items"}),
        (many, {"items": "must have 1 to 50 items"}),
        (twice, {"items.1.bookId": "repeats items.0.bookId; give each book once"}),
        ("book-1", {"items": "must be an array"}),
    ):
        response = await client.post("/orders", json={"items": items}, headers=customer.headers)
        assert response.status_code == 400
        assert response.json()["error"]["fields"] == fields


async def test_bodies_that_are_not_json_objects_are_malformed_json(
    client: httpx.AsyncClient, customer: Caller
) -> None:
    headers = {**customer.headers, "Content-Type": "application/json"}
    for body in (b"{nope", b"[1, 2]", b""):
        response = await client.post("/orders", content=body, headers=headers)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "MALFORMED_JSON"


async def test_other_media_types_are_refused_but_merge_patch_is_accepted_on_patch(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder
) -> None:
    order = (await new_order(customer)).json()["data"]
    merge_patch = {**customer.headers, "Content-Type": "application/merge-patch+json"}

    post = await client.post("/orders", content=b'{"items": []}', headers=merge_patch)
    text = await client.post(
        "/orders", content=b"x", headers={**customer.headers, "Content-Type": "text/plain"}
    )
    xml_only = await client.get("/orders", headers={**customer.headers, "Accept": "text/xml"})
    patch = await client.patch(
        f"/orders/{order['id']}", content=b'{"note": null}', headers=merge_patch
    )

    assert post.status_code == 415
    assert text.status_code == 415
    assert xml_only.status_code == 406
    assert patch.status_code == 200
    assert patch.json()["data"]["note"] is None


async def test_merge_patch_leaves_absent_fields_and_refuses_null_for_items_and_status(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder, books: list[str]
) -> None:
    order = (await new_order(customer)).json()["data"]
    url = f"/orders/{order['id']}"

    empty = await client.patch(url, json={}, headers=customer.headers)
    nulls = await client.patch(url, json={"items": None, "status": None}, headers=customer.headers)
    bad_status = await client.patch(url, json={"status": "lost"}, headers=customer.headers)
    items = await client.patch(
        url, json={"items": [{"bookId": books[2], "quantity": 5}]}, headers=customer.headers
    )

    assert empty.status_code == 200
    assert empty.json() == {"data": order}
    assert empty.headers["etag"] == f'"{order["id"]}-1"'  # nothing changed: same version
    assert nulls.status_code == 400
    assert nulls.json()["error"]["fields"] == {
        "items": "cannot be null",
        "status": "cannot be null",
    }
    assert bad_status.status_code == 400
    assert bad_status.json()["error"]["fields"] == {
        "status": "must be one of: pending, confirmed, shipped, delivered, cancelled"
    }
    assert items.status_code == 200
    assert items.json()["data"]["items"] == [{"bookId": books[2], "quantity": 5}]
    assert items.json()["data"]["note"] == order["note"]


async def test_unknown_books_are_422_naming_each_item_and_nothing_is_written(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder, books: list[str]
) -> None:
    body = {
        "items": [
            {"bookId": books[0], "quantity": 1},
            {"bookId": str(uuid.uuid4()), "quantity": 1},  # an id, of no book
            {"bookId": "nor-this", "quantity": 1},  # not even an id
        ]
    }
    created = await client.post("/orders", json=body, headers=customer.headers)
    order = (await new_order(customer)).json()["data"]
    replaced = await client.put(f"/orders/{order['id']}", json=body, headers=customer.headers)

    for response in (created, replaced):
        assert response.status_code == 422
        error = response.json()["error"]
        assert error["code"] == "UNKNOWN_BOOK"
        assert error["fields"] == {
            "items.1.bookId": "is not in the catalog",
            "items.2.bookId": "is not in the catalog",
        }
    assert await Order.filter(user_id=customer.id).count() == 1
    unchanged = await client.get(f"/orders/{order['id']}", headers=customer.headers)
    assert unchanged.json()["data"] == order


async def test_the_catalog_is_asked_once_about_every_distinct_book_of_an_order(
    client: httpx.AsyncClient, customer: Caller, catalog: Gate, books: list[str]
) -> None:
    body = {"items": [{"bookId": books[1], "quantity": 1}, {"bookId": books[0], "quantity": 3}]}

    response = await client.post("/orders", json=body, headers=customer.headers)

    assert response.status_code == 201
    asked = [list(request.json()["variables"].values()) for request in catalog.passed]
    assert asked == [[books[1], books[0]]]


async def test_a_catalog_outage_is_503_with_retry_after_and_nothing_is_written(
    client: httpx.AsyncClient,
    customer: Caller,
    catalog: Gate,
    new_order: NewOrder,
    books: list[str],
) -> None:
    order = (await new_order(customer)).json()["data"]
    body = {"items": [{"bookId": books[2], "quantity": 1}]}

    async with catalog.down():
        created = await client.post("/orders", json=body, headers=customer.headers)
        patched = await client.patch(f"/orders/{order['id']}", json=body, headers=customer.headers)
        note_only = await client.patch(
            f"/orders/{order['id']}", json={"note": "no books involved"}, headers=customer.headers
        )

    for response in (created, patched):
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "UNAVAILABLE"
        assert "retry-after" in response.headers
    assert await Order.filter(user_id=customer.id).count() == 1
    assert note_only.status_code == 200  # changes that name no new book need no catalog


async def test_405_lists_the_allowed_methods(client: httpx.AsyncClient, customer: Caller) -> None:
    response = await client.request("PATCH", "/orders", headers=customer.headers)

    assert response.status_code == 405
    assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    allowed = set(response.headers["allow"].replace(" ", "").split(","))
    assert {"GET", "POST"} <= allowed
    assert not {"PUT", "PATCH", "DELETE"} & allowed


async def test_every_response_carries_a_request_id(
    client: httpx.AsyncClient, customer: Caller
) -> None:
    ok = await client.get("/orders", headers={**customer.headers, "X-Request-ID": "req-1"})
    error = await client.get("/orders")

    assert ok.headers["x-request-id"] == "req-1"
    assert error.status_code == 401
    assert error.headers["x-request-id"]
