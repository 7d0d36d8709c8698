"""Who sees and changes which orders: owners, other customers, admins, and user-scoped lists."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import httpx

from api_testkit.actors import PASSWORD, new_email, sign_up
from api_testkit.callers import Caller
from api_testkit.gates import Gate

NewOrder = Callable[..., Awaitable[httpx.Response]]


def lookups(directory: Gate) -> list[tuple[str, str]]:
    """The users the app looked up in users-service (path, credentials), in order; its
    questions about the caller's own standing (``/api/users/me``) are not lookups."""
    return [
        (request.path, request.headers["Authorization"])
        for request in directory.passed
        if request.path != "/api/users/me"
    ]


async def test_someone_elses_order_is_403_for_every_method_and_stays_unchanged(
    client: httpx.AsyncClient,
    customer: Caller,
    other_customer: Caller,
    new_order: NewOrder,
    books: list[str],
) -> None:
    order = (await new_order(customer)).json()["data"]
    url = f"/orders/{order['id']}"
    body = {"items": [{"bookId": books[1], "quantity": 1}]}

    for method in ("GET", "PUT", "PATCH", "DELETE"):
        response = await client.request(method, url, json=body, headers=other_customer.headers)
        assert response.status_code == 403, method
        assert response.json()["error"]["code"] == "FORBIDDEN"
    assert (await client.get(url, headers=customer.headers)).json()["data"] == order


async def test_a_customer_lists_only_their_own_orders(
    client: httpx.AsyncClient, customer: Caller, other_customer: Caller, new_order: NewOrder
) -> None:
    mine = (await new_order(customer)).json()["data"]
    await new_order(other_customer)

    response = await client.get("/orders", headers=customer.headers)

    assert response.status_code == 200
    assert response.json() == {"data": [mine], "page": {"total": 1, "limit": 20, "offset": 0}}


async def test_an_admin_sees_changes_and_deletes_anyones_orders(
    client: httpx.AsyncClient, admin: Caller, customer: Caller, new_order: NewOrder
) -> None:
    order = (await new_order(customer)).json()["data"]
    url = f"/orders/{order['id']}"

    read = await client.get(url, headers=admin.headers)
    patched = await client.patch(url, json={"note": "checked"}, headers=admin.headers)
    deleted = await client.delete(url, headers=admin.headers)

    assert read.status_code == 200
    assert patched.status_code == 200
    assert patched.json()["data"]["note"] == "checked"
    assert patched.json()["data"]["userId"] == customer.id  # the owner stays the owner
    assert deleted.status_code == 204


async def test_an_admins_list_holds_everyones_orders_and_filters_by_user(
    client: httpx.AsyncClient,
    admin: Caller,
    customer: Caller,
    other_customer: Caller,
    new_order: NewOrder,
) -> None:
    first = (await new_order(customer)).json()["data"]
    second = (await new_order(other_customer)).json()["data"]

    everyone = await client.get("/orders?sort=-createdAt&limit=100", headers=admin.headers)
    one_user = await client.get(f"/orders?userId={customer.id}", headers=admin.headers)

    assert everyone.status_code == 200
    ids = [order["id"] for order in everyone.json()["data"]]
    assert ids[:2] == [second["id"], first["id"]]
    assert one_user.json() == {"data": [first], "page": {"total": 1, "limit": 20, "offset": 0}}


async def test_user_id_filter_is_not_allowed_for_a_customer_even_with_their_own_id(
    client: httpx.AsyncClient, customer: Caller, admin: Caller
) -> None:
    for user_id in (customer.id, str(uuid.uuid4())):
        response = await client.get(f"/orders?userId={user_id}", headers=customer.headers)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "BAD_FILTER"
    not_a_uuid = await client.get("/orders?userId=bob", headers=admin.headers)
    assert not_a_uuid.status_code == 400
    assert not_a_uuid.json()["error"]["fields"] == {"userId": "must be a UUID"}


async def test_a_customer_lists_their_own_orders_under_their_user_path_without_a_lookup(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder, directory: Gate
) -> None:
    order = (await new_order(customer)).json()["data"]

    response = await client.get(f"/users/{customer.id}/orders", headers=customer.headers)

    assert response.status_code == 200
    assert response.json() == {"data": [order], "page": {"total": 1, "limit": 20, "offset": 0}}
    assert lookups(directory) == []


async def test_a_customer_naming_another_user_gets_403_without_any_lookup(
    client: httpx.AsyncClient, customer: Caller, other_customer: Caller, directory: Gate
) -> None:
    for user_id in (other_customer.id, str(uuid.uuid4())):  # a real user, and nobody
        response = await client.get(f"/users/{user_id}/orders", headers=customer.headers)
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "FORBIDDEN"
    assert lookups(directory) == []


async def test_an_admin_lists_an_existing_users_orders_asking_with_their_own_token(
    client: httpx.AsyncClient,
    admin: Caller,
    customer: Caller,
    new_order: NewOrder,
    directory: Gate,
) -> None:
    order = (await new_order(customer)).json()["data"]

    response = await client.get(f"/users/{customer.id}/orders", headers=admin.headers)

    assert response.status_code == 200
    assert response.json()["data"] == [order]
    assert lookups(directory) == [(f"/api/users/{customer.id}", admin.headers["Authorization"])]


async def test_an_admin_naming_a_user_that_does_not_exist_gets_404(
    client: httpx.AsyncClient, admin: Caller
) -> None:
    for user_id in (str(uuid.uuid4()), "not-a-uuid"):
        response = await client.get(f"/users/{user_id}/orders", headers=admin.headers)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "NOT_FOUND"


async def test_an_existing_user_without_orders_has_an_empty_page(
    client: httpx.AsyncClient, admin: Caller, users_api: httpx.AsyncClient
) -> None:
    user = await sign_up(users_api, email=new_email(), password=PASSWORD)

    response = await client.get(f"/users/{user['id']}/orders", headers=admin.headers)

    assert response.json() == {"data": [], "page": {"total": 0, "limit": 20, "offset": 0}}


async def test_users_service_down_is_503_for_an_admins_user_lookup(
    client: httpx.AsyncClient, admin: Caller, customer: Caller, directory: Gate
) -> None:
    url = f"/users/{customer.id}/orders"
    # users-service confirms the admin first; its answer is kept for STANDING_CACHE_S, so
    # that only the lookup meets the outage.
    assert (await client.get(url, headers=admin.headers)).status_code == 200

    async with directory.down():
        response = await client.get(url, headers=admin.headers)

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "UNAVAILABLE"
    assert "retry-after" in response.headers


async def test_users_service_down_is_503_for_an_admin_it_has_not_confirmed_yet(
    client: httpx.AsyncClient, admin: Caller, customer: Caller, directory: Gate
) -> None:
    async with directory.down():
        response = await client.get(f"/users/{customer.id}/orders", headers=admin.headers)

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "UNAVAILABLE"
    assert "retry-after" in response.headers


async def test_user_scoped_lists_page_sort_and_filter_like_the_main_list(
    client: httpx.AsyncClient, customer: Caller, new_order: NewOrder
) -> None:
    first = (await new_order(customer)).json()["data"]
    second = (await new_order(customer)).json()["data"]
    await client.patch(
        f"/orders/{first['id']}", json={"status": "cancelled"}, headers=customer.headers
    )
    base = f"/users/{customer.id}/orders"

    newest = await client.get(f"{base}?sort=-createdAt&limit=1", headers=customer.headers)
    cancelled = await client.get(f"{base}?status=cancelled", headers=customer.headers)
    by_user = await client.get(f"{base}?userId={customer.id}", headers=customer.headers)

    assert newest.json()["data"] == [second]
    assert newest.json()["page"] == {"total": 2, "limit": 1, "offset": 0}
    assert [order["id"] for order in cancelled.json()["data"]] == [first["id"]]
    assert by_user.status_code == 400
    assert by_user.json()["error"]["code"] == "BAD_FILTER"
