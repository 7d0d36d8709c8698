"""Paging, sorting and filtering of order lists (docs/api.md#paging-and-sorting, #orders)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx
import pytest

from api_testkit.callers import Caller

NewOrder = Callable[..., Awaitable[httpx.Response]]


async def _ids(client: httpx.AsyncClient, caller: Caller, query: str) -> list[str]:
    response = await client.get(f"/orders?{query}", headers=caller.headers)
    assert response.status_code == 200, response.text
    return [order["id"] for order in response.json()["data"]]


async def test_orders_sort_by_creation_and_by_last_change_both_ways(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder
) -> None:
    a, b, c = [(await new_order(customer)).json()["data"]["id"] for _ in range(3)]
    await client.patch(f"/orders/{a}", json={"note": "touched"}, headers=customer.headers)

    assert await _ids(client, customer, "") == [a, b, c]
    assert await _ids(client, customer, "sort=createdAt") == [a, b, c]
    assert await _ids(client, customer, "sort=-createdAt") == [c, b, a]
    assert await _ids(client, customer, "sort=updatedAt") == [b, c, a]
    assert await _ids(client, customer, "sort=-updatedAt") == [a, c, b]


async def test_pages_never_skip_or_repeat_an_order(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder
) -> None:
    created = [(await new_order(customer)).json()["data"]["id"] for _ in range(5)]

    seen: list[str] = []
    for offset in range(0, 6, 2):
        response = await client.get(
            f"/orders?limit=2&offset={offset}&sort=-createdAt", headers=customer.headers
        )
        assert response.json()["page"] == {"total": 5, "limit": 2, "offset": offset}
        seen += [order["id"] for order in response.json()["data"]]

    assert seen == created[::-1]


async def test_limit_and_offset_are_clamped_and_echoed(
    client: httpx.AsyncClient, customer: Caller
) -> None:
    for query, page in (
        ("limit=500", {"total": 0, "limit": 100, "offset": 0}),
        ("limit=0&offset=-5", {"total": 0, "limit": 1, "offset": 0}),
    ):
        response = await client.get(f"/orders?{query}", headers=customer.headers)
        assert response.json() == {"data": [], "page": page}


@pytest.mark.parametrize(
    ("query", "code", "fields"),
    [
        ("limit=ten", "VALIDATION_FAILED", {"limit": "must be an integer"}),
        ("offset=1.5", "VALIDATION_FAILED", {"offset": "must be an integer"}),
        ("sort=note", "BAD_SORT", None),
        ("sort=-id", "BAD_SORT", None),
        (
            "status=lost",
            "VALIDATION_FAILED",
            {"status": "must be one of: pending, confirmed, shipped, delivered, cancelled"},
        ),
        ("colour=red", "BAD_FILTER", None),
    ],
)
async def test_bad_list_parameters_are_400_with_the_right_code(
    client: httpx.AsyncClient, customer: Caller, query: str, code: str, fields: object
) -> None:
    response = await client.get(f"/orders?{query}", headers=customer.headers)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == code
    assert response.json()["error"].get("fields") == fields


async def test_status_filter_keeps_only_orders_in_that_status(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder
) -> None:
    kept = (await new_order(customer)).json()["data"]["id"]
    cancelled = (await new_order(customer)).json()["data"]["id"]
    await client.patch(
        f"/orders/{cancelled}", json={"status": "cancelled"}, headers=customer.headers
    )

    assert await _ids(client, customer, "status=pending") == [kept]
    assert await _ids(client, customer, "status=cancelled") == [cancelled]
    assert await _ids(client, customer, "status=shipped") == []
