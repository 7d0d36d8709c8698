"""API keys through the gateway: a script's credential, within its scopes, revocable at once.

A key (``ak_live_…``) works wherever an access token works, for what its scopes name and its
owner's role allows; the gateway and each service ask users-service about it (keeping the
answer ``STANDING_CACHE_S``), so revoking it, or suspending its owner, ends it everywhere
within seconds. The attack tests try every route a read-only key should not reach.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from api_testkit.actors import admin, customer
from api_testkit.api_keys import create_key, key_headers
from api_testkit.catalog import book_ids
from api_testkit.orders import place
from api_testkit.stack import Stack

pytestmark = pytest.mark.needs(
    users_service="1.3.0", gateway="1.3.0", orders_service="1.2.0", webhooks_service="1.2.0"
)


def assert_lacks_scope(response: httpx.Response, scope: str) -> None:
    assert response.status_code == 403, response.text
    assert response.json()["error"]["code"] == "FORBIDDEN"
    assert scope in response.json()["error"]["message"]
    assert response.headers["www-authenticate"] == (
        f'Bearer error="insufficient_scope", scope="{scope}"'
    )


@pytest.mark.smoke
async def test_a_read_only_key_lists_its_owners_orders_and_may_not_place_one(
    gateway: httpx.AsyncClient,
) -> None:
    _, headers = await customer(gateway)
    order = (await place(gateway, headers)).json()["data"]
    key = await create_key(gateway, headers, "orders:read", name="back office")

    listed = await gateway.get("/orders", headers=key_headers(key))
    placed = await place(gateway, key_headers(key))
    keys = await gateway.get("/api/api-keys", headers=headers)

    assert listed.status_code == 200, listed.text
    assert [o["id"] for o in listed.json()["data"]] == [order["id"]]
    assert_lacks_scope(placed, "orders:write")
    shown = keys.json()["data"]
    assert [(k["id"], k["name"], k["scopes"]) for k in shown] == [
        (key["id"], "back office", ["orders:read"])
    ]
    assert key["secret"].startswith(shown[0]["prefix"])
    assert "secret" not in shown[0]


@pytest.mark.smoke
async def test_a_revoked_key_is_refused_at_the_gateway_within_seconds(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    _, headers = await customer(gateway)
    key = await create_key(gateway, headers, "orders:read")
    before = await gateway.get("/orders", headers=key_headers(key))  # its answer is now kept

    revoked = await gateway.delete(f"/api/api-keys/{key['id']}", headers=headers)
    await asyncio.sleep(stack.standing_cache_s)
    after = await gateway.get("/orders", headers=key_headers(key))

    assert before.status_code == 200, before.text
    assert revoked.status_code == 204, revoked.text
    assert after.status_code == 401, after.text
    assert after.json()["error"]["code"] == "UNAUTHENTICATED"


@pytest.mark.processes  # orders-service's own port
async def test_a_revoked_key_is_refused_by_orders_service_itself_within_seconds(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    _, headers = await customer(gateway)
    key = await create_key(gateway, headers, "orders:read", "orders:write")
    orders_url = stack.services["orders"].url
    items = [{"bookId": (await book_ids(gateway))[0], "quantity": 1}]
    async with httpx.AsyncClient(base_url=orders_url, timeout=15.0) as orders:
        before = await orders.get("/orders", headers=key_headers(key))
        await gateway.delete(f"/api/api-keys/{key['id']}", headers=headers)
        await asyncio.sleep(stack.standing_cache_s)
        after_read = await orders.get("/orders", headers=key_headers(key))
        after_write = await place(orders, key_headers(key), items=items)

    assert before.status_code == 200, before.text
    for refused in (after_read, after_write):
        assert refused.status_code == 401, refused.text
        assert refused.json()["error"]["code"] == "UNAUTHENTICATED"


async def test_a_key_cannot_make_a_key_with_a_scope_it_lacks(
    gateway: httpx.AsyncClient,
) -> None:
    _, headers = await customer(gateway)
    key = await create_key(gateway, headers, "api-keys:write", "api-keys:read", "orders:read")

    wider = await gateway.post(
        "/api/api-keys",
        json={"name": "wider", "scopes": ["orders:read", "orders:write"]},
        headers=key_headers(key),
    )
    narrower = await gateway.post(
        "/api/api-keys",
        json={"name": "narrower", "scopes": ["orders:read"]},
        headers=key_headers(key),
    )
    names = [
        k["name"] for k in (await gateway.get("/api/api-keys", headers=headers)).json()["data"]
    ]

    assert wider.status_code == 403, wider.text
    assert "orders:write" in wider.json()["error"]["message"]
    assert narrower.status_code == 201, narrower.text
    assert narrower.json()["data"]["scopes"] == ["orders:read"]
    assert sorted(names) == ["a script", "narrower"]


async def test_a_read_only_key_reaches_no_route_beyond_its_scope(
    gateway: httpx.AsyncClient,
) -> None:
    me, headers = await customer(gateway)
    key = key_headers(await create_key(gateway, headers, "orders:read"))
    endpoint = {"url": "https://hooks.example.com/mine", "eventTypes": ["*"]}
    attempts = {
        "users:read": [
            await gateway.get("/api/users/me", headers=key),
            await gateway.get(f"/api/users/{me['id']}", headers=key),
        ],
        "users:write": [
            await gateway.patch(f"/api/users/{me['id']}", json={"name": "Mallory"}, headers=key),
        ],
        "webhooks:manage": [
            await gateway.get("/api/webhooks", headers=key),
            await gateway.post("/api/webhooks", json=endpoint, headers=key),
        ],
        "api-keys:read": [await gateway.get("/api/api-keys", headers=key)],
        "events:read": [await gateway.get("/api/events", headers=key)],
        "api-keys:write": [
            await gateway.post(
                "/api/api-keys", json={"name": "x", "scopes": ["orders:read"]}, headers=key
            )
        ],
    }
    sessions = await gateway.delete("/api/auth/sessions", headers=key)
    me_after = await gateway.get("/api/users/me", headers=headers)

    for scope, responses in attempts.items():
        for response in responses:
            assert_lacks_scope(response, scope)
    assert sessions.status_code == 403, sessions.text  # sessions are a person's, never a key's
    assert me_after.json()["data"]["name"] == me["name"]


async def test_graphql_serves_a_key_the_public_catalog_and_nothing_to_write(
    gateway: httpx.AsyncClient,
) -> None:
    _, headers = await customer(gateway)
    key = key_headers(await create_key(gateway, headers, "orders:read"))

    read = await gateway.post("/graphql", json={"query": "{ books { id } }"}, headers=key)
    write = await gateway.post(
        "/graphql", json={"query": 'mutation { deleteBook(id: "1") { id } }'}, headers=key
    )

    assert read.status_code == 200, read.text
    assert read.json()["data"]["books"]
    assert write.json().get("data") is None
    assert write.json()["errors"]


async def test_a_suspended_owners_keys_stop_working(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    me, headers = await customer(gateway)
    key = key_headers(await create_key(gateway, headers, "orders:read"))
    before = await gateway.get("/orders", headers=key)

    suspended = await gateway.patch(
        f"/api/users/{me['id']}", json={"isActive": False}, headers=await admin(gateway, stack)
    )
    await asyncio.sleep(stack.standing_cache_s)
    after = await gateway.get("/orders", headers=key)

    assert before.status_code == 200, before.text
    assert suspended.status_code == 200, suspended.text
    assert after.status_code == 403, after.text
    assert after.json()["error"]["code"] == "FORBIDDEN"


async def test_the_secret_is_shown_once_and_describes_itself(
    gateway: httpx.AsyncClient,
) -> None:
    me, headers = await customer(gateway)
    key = await create_key(gateway, headers, "orders:read")

    again = await gateway.get(f"/api/api-keys/{key['id']}", headers=headers)
    itself = await gateway.get("/api/api-keys/current", headers=key_headers(key))

    assert key["secret"].startswith("ak_live_")
    assert len(key["secret"]) == len("ak_live_") + 43
    assert "secret" not in again.json()["data"]
    assert itself.status_code == 200, itself.text
    assert itself.json()["data"]["id"] == key["id"]
    assert itself.json()["data"]["owner"] == {"id": me["id"], "role": "customer"}
