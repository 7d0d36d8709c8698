"""``page.total`` comes from ``user_counts``: it must stay exact through every kind of write.

The session's database holds users from other tests, so each test compares the totals the
API reports with ``count(*)`` on the same database, and with the changes it made itself.
The server runs in this process (conftest), so the ORM is open here too.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx

from api_shared.auth import Role
from users_service.models import User

Account = Any  # the conftest fixture's Account


async def totals(client: httpx.AsyncClient, admin: Account) -> dict[str, int]:
    """page.total of the list without a filter and per role, as the API reports them."""
    reported = {}
    for name, query in (("all", ""), ("customer", "&role=customer"), ("admin", "&role=admin")):
        response = await client.get(f"/api/users?limit=1{query}", headers=admin.headers)
        assert response.status_code == 200, response.text
        reported[name] = response.json()["page"]["total"]
    return reported


async def counted() -> dict[str, int]:
    """The same numbers by ``count(*)``: what the totals must equal."""
    return {
        "all": await User.all().count(),
        "customer": await User.filter(role=Role.CUSTOMER).count(),
        "admin": await User.filter(role=Role.ADMIN).count(),
    }


async def sign_up(client: httpx.AsyncClient, email: str | None = None) -> httpx.Response:
    body = {"name": "Counted", **({"email": email} if email else {})}
    return await client.post("/api/users", json=body)


async def test_the_totals_equal_count_star_for_every_filter(
    client: httpx.AsyncClient, admin: Account
) -> None:
    await sign_up(client)

    reported = await totals(client, admin)

    assert reported == await counted()
    assert reported["all"] == reported["customer"] + reported["admin"]


async def test_sign_ups_and_deletes_move_the_total_by_one_each(
    client: httpx.AsyncClient, admin: Account
) -> None:
    before = await totals(client, admin)

    created = await sign_up(client)
    after_sign_up = await totals(client, admin)
    deleted = await client.delete(
        f"/api/users/{created.json()['data']['id']}", headers=admin.headers
    )

    assert deleted.status_code == 204
    assert after_sign_up["all"] == before["all"] + 1
    assert after_sign_up["customer"] == before["customer"] + 1
    assert await totals(client, admin) == before


async def test_a_refused_sign_up_and_a_second_delete_change_nothing(
    client: httpx.AsyncClient, admin: Account
) -> None:
    email = f"taken-{uuid.uuid4().hex[:10]}@example.com"
    user_id = (await sign_up(client, email)).json()["data"]["id"]
    before = await totals(client, admin)

    duplicate = await sign_up(client, email)
    await client.delete(f"/api/users/{user_id}", headers=admin.headers)
    again = await client.delete(f"/api/users/{user_id}", headers=admin.headers)

    assert duplicate.status_code == 409
    assert again.status_code == 404
    assert (await totals(client, admin))["all"] == before["all"] - 1


async def test_concurrent_sign_ups_and_deletes_keep_the_totals_exact(
    client: httpx.AsyncClient, admin: Account
) -> None:
    doomed = [(await sign_up(client)).json()["data"]["id"] for _ in range(10)]
    before = await totals(client, admin)
    email = f"raced-{uuid.uuid4().hex[:10]}@example.com"

    responses = await asyncio.gather(
        *(sign_up(client) for _ in range(20)),
        *(sign_up(client, email) for _ in range(5)),  # one wins, four get 409
        *(client.delete(f"/api/users/{user_id}", headers=admin.headers) for user_id in doomed),
        # The same user deleted twice at once: one 204, one 404, one decrement.
        *(client.delete(f"/api/users/{doomed[0]}", headers=admin.headers) for _ in range(2)),
    )

    statuses = [response.status_code for response in responses]
    assert statuses.count(201) == 21
    assert statuses.count(409) == 4
    assert statuses.count(204) == 10
    after = await totals(client, admin)
    assert after["all"] == before["all"] + 21 - 10
    assert after == await counted()


async def test_a_role_change_moves_the_user_between_the_role_totals(
    client: httpx.AsyncClient, admin: Account
) -> None:
    user_id = (await sign_up(client)).json()["data"]["id"]
    before = await totals(client, admin)

    promoted = await client.patch(
        f"/api/users/{user_id}", json={"role": "admin"}, headers=admin.headers
    )
    after_promotion = await totals(client, admin)
    restated = await client.patch(
        f"/api/users/{user_id}", json={"role": "admin", "name": "Renamed"}, headers=admin.headers
    )
    after_restating = await totals(client, admin)
    await client.patch(f"/api/users/{user_id}", json={"role": "customer"}, headers=admin.headers)

    assert promoted.status_code == 200
    assert restated.status_code == 200
    assert after_promotion == {
        "all": before["all"],
        "customer": before["customer"] - 1,
        "admin": before["admin"] + 1,
    }
    assert after_restating == after_promotion
    assert await totals(client, admin) == before


async def test_concurrent_role_changes_and_deletes_keep_the_totals_exact(
    client: httpx.AsyncClient, admin: Account
) -> None:
    ids = [(await sign_up(client)).json()["data"]["id"] for _ in range(6)]

    def patch(user_id: str, role: str) -> Any:
        return client.patch(f"/api/users/{user_id}", json={"role": role}, headers=admin.headers)

    await asyncio.gather(
        *(patch(user_id, "admin") for user_id in ids),
        *(patch(user_id, "customer") for user_id in ids[:3]),  # races with the promotions
        *(client.delete(f"/api/users/{user_id}", headers=admin.headers) for user_id in ids[3:]),
    )

    assert await totals(client, admin) == await counted()
    for user_id in ids[:3]:  # leave the session's admin count as it was
        await client.delete(f"/api/users/{user_id}", headers=admin.headers)
