"""GET → edit → PUT (or PATCH): an order's output-only fields may be sent back unchanged
(AIP-203), and are refused by name when they would change something; nothing is written then."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from api_testkit.callers import Caller
from orders_service.models import Order
from orders_service.schemas import CHANGED_READ_ONLY, STATUS_ON_PUT

NewOrder = Callable[..., Awaitable[httpx.Response]]

CHANGES: dict[str, Any] = {
    "id": str(uuid.uuid4()),
    "userId": str(uuid.uuid4()),
    "status": "cancelled",
    "createdAt": "2020-01-01T00:00:00Z",
    "updatedAt": "2020-01-01T00:00:00Z",
}


async def _read(client: httpx.AsyncClient, caller: Caller, order_id: str) -> httpx.Response:
    response = await client.get(f"/orders/{order_id}", headers=caller.headers)
    assert response.status_code == 200
    return response


async def _version(order_id: str) -> int:
    return (await Order.get(id=order_id)).version


async def test_a_get_body_put_back_unchanged_changes_nothing(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder
) -> None:
    order_id = (await new_order(customer)).json()["data"]["id"]
    read = await _read(client, customer, order_id)

    put = await client.put(
        f"/orders/{order_id}",
        json=read.json()["data"],
        headers={**customer.headers, "If-Match": read.headers["etag"]},
    )

    assert put.status_code == 200, put.text
    assert put.json() == read.json()
    assert put.headers["etag"] == read.headers["etag"]  # no write: same version
    assert await _version(order_id) == 1
    assert (await _read(client, customer, order_id)).json() == read.json()


async def test_a_get_body_with_an_edited_field_put_back_changes_that_field_only(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder, books: list[str]
) -> None:
    order_id = (await new_order(customer)).json()["data"]["id"]
    read = await _read(client, customer, order_id)
    before = read.json()["data"]
    edited = {**before, "items": [{"bookId": books[1], "quantity": 3}]}

    put = await client.put(
        f"/orders/{order_id}",
        json=edited,
        headers={**customer.headers, "If-Match": read.headers["etag"]},
    )

    assert put.status_code == 200, put.text
    after = put.json()["data"]
    assert after["items"] == [{"bookId": books[1], "quantity": 3}]
    unchanged = ("id", "userId", "status", "note", "createdAt")
    assert {key: after[key] for key in unchanged} == {key: before[key] for key in unchanged}
    assert put.headers["etag"] == f'"{order_id}-2"'
    assert (await _read(client, customer, order_id)).json()["data"] == after


@pytest.mark.parametrize("field", list(CHANGES))
async def test_a_put_changing_an_output_only_field_is_refused_naming_it(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder, books: list[str], field: str
) -> None:
    order_id = (await new_order(customer)).json()["data"]["id"]
    read = await _read(client, customer, order_id)
    # The writable fields are edited too: the refusal writes none of them.
    body = {**read.json()["data"], "note": "changed", field: CHANGES[field]}

    put = await client.put(f"/orders/{order_id}", json=body, headers=customer.headers)

    assert put.status_code == 400
    error = put.json()["error"]
    assert error["code"] == "VALIDATION_FAILED"
    assert error["fields"] == {field: STATUS_ON_PUT if field == "status" else CHANGED_READ_ONLY}
    assert error["message"].startswith(field)
    assert (await _read(client, customer, order_id)).json() == read.json()
    assert await _version(order_id) == 1


async def test_a_put_changing_the_status_is_told_to_patch_it(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder
) -> None:
    order = (await new_order(customer)).json()["data"]

    put = await client.put(
        f"/orders/{order['id']}", json={**order, "status": "cancelled"}, headers=customer.headers
    )
    patch = await client.patch(
        f"/orders/{order['id']}", json={**order, "status": "cancelled"}, headers=customer.headers
    )

    assert put.status_code == 400
    assert 'PATCH /orders/{id} {"status": ...}' in put.json()["error"]["fields"]["status"]
    assert patch.status_code == 200, patch.text
    assert patch.json()["data"]["status"] == "cancelled"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("createdAt", "same moment, written otherwise"),
        ("id", "the same id in capitals"),
        ("userId", 42),
    ],
)
async def test_values_are_compared_as_the_representation_writes_them(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder, field: str, value: Any
) -> None:
    order = (await new_order(customer)).json()["data"]
    if field == "createdAt":
        value = order["createdAt"].replace("Z", ".000+00:00")
    elif field == "id":
        value = order["id"].upper()

    put = await client.put(
        f"/orders/{order['id']}", json={**order, field: value}, headers=customer.headers
    )

    assert put.status_code == 400
    assert put.json()["error"]["fields"] == {field: CHANGED_READ_ONLY}


@pytest.mark.parametrize("field", ["id", "userId", "createdAt", "updatedAt"])
async def test_a_patch_takes_the_same_rule(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder, field: str
) -> None:
    order = (await new_order(customer)).json()["data"]
    url = f"/orders/{order['id']}"

    unchanged = await client.patch(url, json={field: order[field]}, headers=customer.headers)
    changed = await client.patch(
        url, json={"note": "changed", field: CHANGES[field]}, headers=customer.headers
    )

    assert unchanged.status_code == 200, unchanged.text
    assert unchanged.json()["data"] == order
    assert changed.status_code == 400
    assert changed.json()["error"]["fields"] == {field: CHANGED_READ_ONLY}
    assert (await _read(client, customer, order["id"])).json()["data"] == order


async def test_a_whole_get_body_sent_as_a_merge_patch_changes_nothing(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder
) -> None:
    created = await new_order(customer)
    order = created.json()["data"]

    patched = await client.patch(
        f"/orders/{order['id']}",
        json=order,
        headers={**customer.headers, "If-Match": created.headers["etag"]},
    )

    assert patched.status_code == 200, patched.text
    assert patched.json()["data"] == order
    assert patched.headers["etag"] == created.headers["etag"]


async def test_a_body_read_before_another_change_is_refused_naming_updated_at(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder
) -> None:
    order = (await new_order(customer)).json()["data"]
    url = f"/orders/{order['id']}"
    # Timestamps are written to the second: this change must land in a later one.
    row = await Order.get(id=order["id"])
    await Order.filter(id=order["id"]).update(updated_at=row.updated_at.replace(year=2020))
    stale = (await _read(client, customer, order["id"])).json()["data"]
    meanwhile = await client.patch(url, json={"note": "meanwhile"}, headers=customer.headers)
    assert meanwhile.status_code == 200

    put = await client.put(url, json={**stale, "note": "mine"}, headers=customer.headers)

    assert put.status_code == 400
    assert put.json()["error"]["fields"] == {"updatedAt": CHANGED_READ_ONLY}
    assert (await _read(client, customer, order["id"])).json()["data"]["note"] == "meanwhile"


async def test_unknown_fields_are_still_refused_and_read_only_ones_on_create(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder
) -> None:
    order = (await new_order(customer)).json()["data"]
    url = f"/orders/{order['id']}"

    put = await client.put(url, json={**order, "colour": "red"}, headers=customer.headers)
    patch = await client.patch(url, json={**order, "colour": "red"}, headers=customer.headers)
    created = await client.post("/orders", json=order, headers=customer.headers)

    for response in (put, patch):
        assert response.status_code == 400
        assert response.json()["error"]["fields"] == {"colour": "is not allowed"}
    assert created.status_code == 400
    assert created.json()["error"]["fields"] == {
        "id": "is read-only",
        "userId": "is read-only",
        "status": "is read-only",
        "createdAt": "is read-only",
        "updatedAt": "is read-only",
    }
    assert (await _read(client, customer, order["id"])).json()["data"] == order


async def test_someone_elses_order_is_403_whatever_output_only_fields_say(
    client: httpx.AsyncClient, customer: Caller, other_customer: Caller, new_order: NewOrder
) -> None:
    order = (await new_order(customer)).json()["data"]

    put = await client.put(
        f"/orders/{order['id']}",
        json={**order, "userId": other_customer.id},
        headers=other_customer.headers,
    )

    assert put.status_code == 403  # the comparison would tell the order's values


async def test_a_stale_if_match_is_412_before_output_only_fields_are_compared(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder
) -> None:
    order = (await new_order(customer)).json()["data"]

    put = await client.put(
        f"/orders/{order['id']}",
        json={**order, "status": "cancelled"},
        headers={**customer.headers, "If-Match": f'"{order["id"]}-9"'},
    )

    assert put.status_code == 412
