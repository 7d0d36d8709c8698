"""GET /api/users: admin only, paged, sorted and filtered on a real database.

The rules are docs/api.md#paging-and-sorting.

The session's database holds users from other tests too, so these tests check their own users'
relative order and the invariants of paging rather than an exact list.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

NewAccount = Any  # the conftest fixture: async (role=..., name=...) -> Account
Account = Any

SORTS = ["createdAt", "-createdAt", "name", "-name"]


async def list_users(client: httpx.AsyncClient, admin: Account, query: str = "") -> httpx.Response:
    return await client.get(f"/api/users{query}", headers=admin.headers)


async def every_user(
    client: httpx.AsyncClient,
    admin: Account,
    sort: str | None,
    page_size: int,
    role: str | None = None,
) -> tuple[list[dict[str, Any]], set[int]]:
    """Walk all pages; return the users in order and every page.total seen."""
    users: list[dict[str, Any]] = []
    totals: set[int] = set()
    while True:
        params = {"sort": sort, "role": role, "limit": page_size, "offset": len(users)}
        response = await client.get(
            "/api/users",
            params={name: value for name, value in params.items() if value is not None},
            headers=admin.headers,
        )
        assert response.status_code == 200
        body = response.json()
        assert body["page"]["offset"] == len(users)
        totals.add(body["page"]["total"])
        users.extend(body["data"])
        if len(body["data"]) < page_size:
            return users, totals


def positions(users: list[dict[str, Any]], ids: list[str]) -> list[str]:
    """``ids`` in the order they appear in ``users``."""
    return [user["id"] for user in users if user["id"] in ids]


async def test_listing_users_needs_a_token(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/users")

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHENTICATED"
    assert response.headers["www-authenticate"] == "Bearer"


async def test_a_customer_may_not_list_users_even_with_bad_parameters(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    customer = await new_account()

    for query in ("", "?sort=email", "?limit=x"):
        response = await client.get(f"/api/users{query}", headers=customer.headers)
        assert response.status_code == 403, query
        assert response.json()["error"]["code"] == "FORBIDDEN"


async def test_an_admin_gets_the_first_page_with_the_defaults(
    client: httpx.AsyncClient, admin: Account
) -> None:
    response = await list_users(client, admin)

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"data", "page"}
    assert body["page"]["limit"] == 20
    assert body["page"]["offset"] == 0
    assert len(body["data"]) == min(20, body["page"]["total"])
    assert set(body["data"][0]) == {
        "id",
        "name",
        "email",
        "emailVerified",
        "role",
        "isActive",
        "createdAt",
        "updatedAt",
    }


@pytest.mark.parametrize(
    ("query", "limit", "offset"),
    [
        ("?limit=1000", 100, 0),
        ("?limit=100", 100, 0),
        ("?limit=0", 1, 0),
        ("?limit=-5", 1, 0),
        ("?offset=-3", 20, 0),
        ("?limit=2&offset=1", 2, 1),
    ],
)
async def test_limit_and_offset_are_clamped_and_reported_as_applied(
    client: httpx.AsyncClient, admin: Account, query: str, limit: int, offset: int
) -> None:
    response = await list_users(client, admin, query)

    assert response.status_code == 200
    page = response.json()["page"]
    assert (page["limit"], page["offset"]) == (limit, offset)
    assert len(response.json()["data"]) == max(0, min(limit, page["total"] - offset))


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("?limit=abc", "limit"),
        ("?limit=", "limit"),
        ("?offset=1.5", "offset"),
        ("?offset=x", "offset"),
    ],
)
async def test_a_non_integer_limit_or_offset_is_400_naming_it(
    client: httpx.AsyncClient, admin: Account, query: str, name: str
) -> None:
    response = await list_users(client, admin, query)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_FAILED"
    assert error["fields"] == {name: "must be an integer"}


@pytest.mark.parametrize("sort", ["email", "-updatedAt", "role", "", "name,createdAt"])
async def test_sorting_on_anything_else_is_bad_sort(
    client: httpx.AsyncClient, admin: Account, sort: str
) -> None:
    response = await list_users(client, admin, f"?sort={sort}")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "BAD_SORT"


@pytest.mark.parametrize("query", ["?email=a@example.com", "?name=Ada", "?page=2", "?q="])
async def test_filtering_on_anything_but_role_is_bad_filter(
    client: httpx.AsyncClient, admin: Account, query: str
) -> None:
    response = await list_users(client, admin, query)

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "BAD_FILTER"


@pytest.mark.parametrize("role", ["owner", "", "ADMIN"])
async def test_an_unknown_role_filter_is_400_naming_role(
    client: httpx.AsyncClient, admin: Account, role: str
) -> None:
    response = await list_users(client, admin, f"?role={role}")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "VALIDATION_FAILED"
    assert set(response.json()["error"]["fields"]) == {"role"}


@pytest.mark.parametrize("role", ["admin", "customer"])
async def test_the_role_filter_returns_exactly_that_role_and_counts_it(
    client: httpx.AsyncClient, admin: Account, new_account: NewAccount, role: str
) -> None:
    await new_account(role="admin")
    await new_account(role="customer")

    users, totals = await every_user(client, admin, "createdAt", 50, role=role)
    everyone, _ = await every_user(client, admin, "createdAt", 100)

    assert {user["role"] for user in users} == {role}
    assert totals == {len(users)}
    assert len(users) == sum(1 for user in everyone if user["role"] == role)


@pytest.mark.parametrize("sort", SORTS)
async def test_walking_the_pages_visits_every_user_exactly_once(
    client: httpx.AsyncClient, admin: Account, new_account: NewAccount, sort: str
) -> None:
    for _ in range(3):
        await new_account(name="Same Name")  # ties on name must not break paging

    paged, totals = await every_user(client, admin, sort, page_size=3)
    whole, _ = await every_user(client, admin, sort, page_size=100)

    ids = [user["id"] for user in paged]
    assert len(ids) == len(set(ids))
    assert totals == {len(ids)}
    assert ids == [user["id"] for user in whole]


async def test_created_at_sorts_oldest_first_and_minus_created_at_newest_first(
    client: httpx.AsyncClient, admin: Account, new_account: NewAccount
) -> None:
    created = [(await new_account()).id for _ in range(3)]

    ascending, _ = await every_user(client, admin, "createdAt", 100)
    descending, _ = await every_user(client, admin, "-createdAt", 100)
    default, _ = await every_user(client, admin, None, 100)

    assert positions(ascending, created) == created
    assert positions(descending, created) == created[::-1]
    assert [u["id"] for u in default] == [u["id"] for u in ascending]


async def test_name_sorts_alphabetically_either_way(
    client: httpx.AsyncClient, admin: Account, new_account: NewAccount
) -> None:
    run = uuid.uuid4().hex[:6]
    by_name = [(await new_account(name=f"sortcheck{run}{letter}")).id for letter in "cab"]
    expected = [by_name[1], by_name[2], by_name[0]]  # a, b, c

    ascending, _ = await every_user(client, admin, "name", 100)
    descending, _ = await every_user(client, admin, "-name", 100)

    assert positions(ascending, by_name) == expected
    assert positions(descending, by_name) == expected[::-1]


async def test_users_with_the_same_name_are_ordered_by_id(
    client: httpx.AsyncClient, admin: Account, new_account: NewAccount
) -> None:
    name = f"twin{uuid.uuid4().hex[:6]}"
    twins = [(await new_account(name=name)).id for _ in range(4)]

    ascending, _ = await every_user(client, admin, "name", 100)
    descending, _ = await every_user(client, admin, "-name", 100)

    in_id_order = sorted(twins, key=uuid.UUID)
    assert positions(ascending, twins) == in_id_order
    assert positions(descending, twins) == in_id_order[::-1]
