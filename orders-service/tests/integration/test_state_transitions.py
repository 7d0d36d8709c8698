"""The state rules as the API applies them: 200 when allowed, 409 INVALID_STATE otherwise."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx
import pytest

from api_testkit.callers import Caller

NewOrder = Callable[..., Awaitable[httpx.Response]]


async def _order_in(
    client: httpx.AsyncClient, admin: Caller, owner: Caller, new_order: NewOrder, path: list[str]
) -> str:
    """A new order of ``owner``, moved by the admin along ``path``."""
    order_id: str = (await new_order(owner)).json()["data"]["id"]
    for status in path:
        response = await client.patch(
            f"/orders/{order_id}", json={"status": status}, headers=admin.headers
        )
        assert response.status_code == 200, response.text
    return order_id


async def test_an_admin_walks_an_order_from_pending_to_delivered(
    client: httpx.AsyncClient, admin: Caller, customer: Caller, new_order: NewOrder
) -> None:
    order_id = await _order_in(
        client, admin, customer, new_order, ["confirmed", "shipped", "delivered"]
    )

    response = await client.get(f"/orders/{order_id}", headers=customer.headers)

    assert response.json()["data"]["status"] == "delivered"
    assert response.headers["etag"] == f'"{order_id}-4"'


@pytest.mark.parametrize("path", [[], ["confirmed"]])
async def test_a_customer_may_cancel_a_pending_or_confirmed_order(
    client: httpx.AsyncClient,
    admin: Caller,
    customer: Caller,
    new_order: NewOrder,
    path: list[str],
) -> None:
    order_id = await _order_in(client, admin, customer, new_order, path)

    response = await client.patch(
        f"/orders/{order_id}", json={"status": "cancelled"}, headers=customer.headers
    )

    assert response.status_code == 200
    assert response.json()["data"]["status"] == "cancelled"


@pytest.mark.parametrize(
    ("path", "target"),
    [
        ([], "confirmed"),
        (["confirmed"], "shipped"),
        (["confirmed", "shipped"], "delivered"),
        (["confirmed", "shipped"], "cancelled"),
        (["cancelled"], "pending"),
    ],
)
async def test_a_customer_making_any_other_transition_gets_409_and_nothing_changes(
    client: httpx.AsyncClient,
    admin: Caller,
    customer: Caller,
    new_order: NewOrder,
    path: list[str],
    target: str,
) -> None:
    order_id = await _order_in(client, admin, customer, new_order, path)
    before = (await client.get(f"/orders/{order_id}", headers=customer.headers)).json()

    response = await client.patch(
        f"/orders/{order_id}", json={"status": target}, headers=customer.headers
    )

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "INVALID_STATE"
    after = await client.get(f"/orders/{order_id}", headers=customer.headers)
    assert after.json() == before


@pytest.mark.parametrize(
    ("path", "target"),
    [
        ([], "shipped"),
        ([], "delivered"),
        (["confirmed"], "pending"),
        (["confirmed", "shipped", "delivered"], "cancelled"),
        (["cancelled"], "confirmed"),
    ],
)
async def test_an_admin_skipping_or_reversing_a_step_gets_409(
    client: httpx.AsyncClient,
    admin: Caller,
    customer: Caller,
    new_order: NewOrder,
    path: list[str],
    target: str,
) -> None:
    order_id = await _order_in(client, admin, customer, new_order, path)

    response = await client.patch(
        f"/orders/{order_id}", json={"status": target}, headers=admin.headers
    )

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "INVALID_STATE"


async def test_a_customer_edits_items_and_note_only_while_pending(
    client: httpx.AsyncClient,
    admin: Caller,
    customer: Caller,
    new_order: NewOrder,
    books: list[str],
) -> None:
    order_id = await _order_in(client, admin, customer, new_order, ["confirmed"])
    url = f"/orders/{order_id}"
    items = [{"bookId": books[1], "quantity": 1}]

    put = await client.put(url, json={"items": items}, headers=customer.headers)
    patch = await client.patch(url, json={"note": "too late"}, headers=customer.headers)
    cancel_with_note = await client.patch(
        url, json={"status": "cancelled", "note": "why"}, headers=customer.headers
    )
    admin_edit = await client.patch(url, json={"items": items}, headers=admin.headers)

    for response in (put, patch, cancel_with_note):
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "INVALID_STATE"
    assert admin_edit.status_code == 200
    assert admin_edit.json()["data"]["items"] == items


async def test_a_status_or_body_that_changes_nothing_is_not_a_transition(
    client: httpx.AsyncClient, admin: Caller, customer: Caller, new_order: NewOrder
) -> None:
    order = (await new_order(customer)).json()["data"]
    order_id = await _order_in(client, admin, customer, new_order, ["confirmed", "shipped"])
    shipped = (await client.get(f"/orders/{order_id}", headers=customer.headers)).json()

    same_status = await client.patch(
        f"/orders/{order_id}", json={"status": "shipped"}, headers=customer.headers
    )
    same_body = await client.put(
        f"/orders/{order['id']}",
        json={"items": order["items"], "note": order["note"]},
        headers=customer.headers,
    )

    assert same_status.status_code == 200
    assert same_status.json() == shipped
    assert same_body.status_code == 200
    assert same_body.json() == {"data": order}
    assert same_body.headers["etag"] == f'"{order["id"]}-1"'


@pytest.mark.parametrize(
    ("path", "customer_may_delete"),
    [
        ([], True),
        (["cancelled"], True),
        (["confirmed"], False),
        (["confirmed", "shipped"], False),
        (["confirmed", "shipped", "delivered"], False),
    ],
)
async def test_a_customer_deletes_only_pending_or_cancelled_orders_an_admin_any(
    client: httpx.AsyncClient,
    admin: Caller,
    customer: Caller,
    new_order: NewOrder,
    path: list[str],
    customer_may_delete: bool,
) -> None:
    order_id = await _order_in(client, admin, customer, new_order, path)

    by_customer = await client.delete(f"/orders/{order_id}", headers=customer.headers)
    by_admin = await client.delete(f"/orders/{order_id}", headers=admin.headers)

    if customer_may_delete:
        assert (by_customer.status_code, by_admin.status_code) == (204, 404)
    else:
        assert by_customer.status_code == 409
        assert by_customer.json()["error"]["code"] == "INVALID_STATE"
        assert by_admin.status_code == 204
