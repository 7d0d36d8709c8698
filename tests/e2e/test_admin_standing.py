"""An admin's powers end everywhere once the account loses them, not when the token expires.

users-service always read the caller's row; orders-service and webhooks-service believed a
token's ``role`` claim for its whole lifetime (15 minutes): a suspended, demoted or
logged-out admin still registered webhooks for ``*`` and read every order. They now ask
users-service (api_shared.standing), whose answer they keep at most ``STANDING_CACHE_S``.
Each test uses the admin's powers first (so that an answer is cached), takes them away,
waits out the cache, and finds every admin action refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import httpx
import pytest

from api_testkit.actors import PASSWORD, access_token, admin, customer, new_email
from api_testkit.callers import bearer
from api_testkit.orders import place
from api_testkit.stack import Stack


async def an_admin(gateway: httpx.AsyncClient, stack: Stack) -> tuple[str, dict[str, str]]:
    """A new admin (made by the stack's own) and the headers of its token."""
    email = new_email()
    made = await gateway.post(
        "/api/users",
        json={"name": "Admin", "email": email, "password": PASSWORD, "role": "admin"},
        headers=await admin(gateway, stack),
    )
    assert made.status_code == 201, made.text
    return made.json()["data"]["id"], bearer(await access_token(gateway, email))


async def suspend(
    gateway: httpx.AsyncClient, stack: Stack, user_id: str, _: dict[str, str]
) -> None:
    changed = await gateway.patch(
        f"/api/users/{user_id}", json={"isActive": False}, headers=await admin(gateway, stack)
    )
    assert changed.status_code == 200, changed.text


async def demote(gateway: httpx.AsyncClient, stack: Stack, user_id: str, _: dict[str, str]) -> None:
    changed = await gateway.patch(
        f"/api/users/{user_id}", json={"role": "customer"}, headers=await admin(gateway, stack)
    )
    assert changed.status_code == 200, changed.text


async def log_out_everywhere(
    gateway: httpx.AsyncClient, stack: Stack, user_id: str, headers: dict[str, str]
) -> None:
    ended = await gateway.post("/api/auth/logout-all", headers=headers)
    assert ended.status_code == 204, ended.text


Loss = Callable[[httpx.AsyncClient, Stack, str, dict[str, str]], Awaitable[None]]


@pytest.mark.smoke
@pytest.mark.parametrize("lose", [suspend, demote, log_out_everywhere], ids=lambda f: f.__name__)
async def test_an_admin_who_lost_the_role_or_the_session_has_no_admin_power_anywhere(
    gateway: httpx.AsyncClient, stack: Stack, lose: Loss
) -> None:
    user_id, headers = await an_admin(gateway, stack)
    # Any URL: a caller who may not manage webhooks is refused before it is looked at.
    endpoint = {"url": "https://hooks.example.com/all", "eventTypes": ["*"]}
    before = (
        (await gateway.get("/orders", headers=headers)).status_code,
        (await gateway.get("/api/webhooks", headers=headers)).status_code,
    )

    await lose(gateway, stack, user_id, headers)
    await asyncio.sleep(stack.standing_cache_s)
    every_order = await gateway.get("/orders", headers=headers)
    new_endpoint = await gateway.post("/api/webhooks", json=endpoint, headers=headers)
    endpoints = await gateway.get("/api/webhooks", headers=headers)

    assert before == (200, 200)
    for refused in (every_order, new_endpoint, endpoints):
        assert refused.status_code in {401, 403}, refused.text
        assert refused.json()["error"]["code"] in {"UNAUTHENTICATED", "FORBIDDEN"}


@pytest.mark.smoke
async def test_a_deleted_users_token_creates_no_order(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    me, headers = await customer(gateway)
    first = await place(gateway, headers)  # the token's standing is now known, and kept
    assert first.status_code == 201, first.text

    deleted = await gateway.request(
        "DELETE", f"/api/users/{me['id']}", json={"currentPassword": PASSWORD}, headers=headers
    )
    await asyncio.sleep(stack.standing_cache_s)
    after = await place(gateway, headers)

    assert deleted.status_code == 204
    assert after.status_code == 401, after.text
    assert after.json()["error"]["code"] == "UNAUTHENTICATED"
