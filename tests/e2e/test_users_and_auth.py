"""Sign-up, tokens, who may see and change whom, through the gateway.

docs/api.md#authentication and docs/api.md#users, end to end.
"""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from api_testkit.actors import PASSWORD, admin, customer, new_email, sign_up
from api_testkit.callers import bearer
from api_testkit.stack import Stack
from api_testkit.tokens import unverified_claims


@pytest.mark.smoke
async def test_sign_up_login_and_read_yourself(gateway: httpx.AsyncClient) -> None:
    email = new_email()
    user = await sign_up(gateway, email=email, password=PASSWORD)

    response = await gateway.post("/api/auth/token", json={"email": email, "password": PASSWORD})
    token = response.json()["data"]
    me = await gateway.get(f"/api/users/{user['id']}", headers=bearer(token["accessToken"]))

    assert user["email"] == email.lower()
    assert "password" not in user
    assert "passwordHash" not in user
    assert token["tokenType"] == "Bearer"
    assert token["expiresIn"] == 900
    claims = unverified_claims(token["accessToken"])
    assert claims["sub"] == user["id"]
    assert claims["role"] == "customer"
    assert {"iss", "aud", "iat", "exp", "jti"} <= set(claims)
    assert me.status_code == 200
    assert me.json()["data"] == user


@pytest.mark.smoke
async def test_unknown_email_and_wrong_password_get_the_same_401(
    gateway: httpx.AsyncClient,
) -> None:
    email = new_email()
    await sign_up(gateway, email=email, password=PASSWORD)

    wrong = await gateway.post("/api/auth/token", json={"email": email, "password": "nope-nope"})
    unknown = await gateway.post(
        "/api/auth/token", json={"email": new_email(), "password": PASSWORD}
    )

    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json() == unknown.json()
    assert wrong.json()["error"]["code"] == "INVALID_CREDENTIALS"


@pytest.mark.smoke
async def test_the_jwks_is_public_through_the_gateway(gateway: httpx.AsyncClient) -> None:
    response = await gateway.get("/.well-known/jwks.json")

    keys = response.json()["keys"]
    assert response.status_code == 200
    assert keys
    assert all(key["kty"] == "OKP" and key["crv"] == "Ed25519" for key in keys)
    assert all("d" not in key for key in keys)  # never the private part


async def test_a_customer_may_not_read_another_user_whether_or_not_it_exists(
    gateway: httpx.AsyncClient,
) -> None:
    _, alice = await customer(gateway)
    bob, _ = await customer(gateway)

    other = await gateway.get(f"/api/users/{bob['id']}", headers=alice)
    missing = await gateway.get(f"/api/users/{uuid.uuid4()}", headers=alice)

    assert other.status_code == missing.status_code == 403
    assert other.json()["error"]["code"] == "FORBIDDEN"


async def test_an_admin_reads_anyone_and_gets_404_for_nobody(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    bob, _ = await customer(gateway)
    headers = await admin(gateway, stack)

    found = await gateway.get(f"/api/users/{bob['id']}", headers=headers)
    missing = await gateway.get(f"/api/users/{uuid.uuid4()}", headers=headers)
    malformed = await gateway.get("/api/users/not-a-uuid", headers=headers)

    assert found.status_code == 200
    assert missing.status_code == malformed.status_code == 404


@pytest.mark.smoke
async def test_only_an_admin_lists_users_with_paging_filter_and_sort(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    _, alice = await customer(gateway)
    headers = await admin(gateway, stack)

    forbidden = await gateway.get("/api/users", headers=alice)
    page = await gateway.get(
        "/api/users", params={"limit": "500", "offset": "-3", "role": "admin"}, headers=headers
    )
    bad_sort = await gateway.get("/api/users", params={"sort": "email"}, headers=headers)
    bad_filter = await gateway.get("/api/users", params={"email": "x"}, headers=headers)
    bad_limit = await gateway.get("/api/users", params={"limit": "ten"}, headers=headers)
    bad_role = await gateway.get("/api/users", params={"role": "root"}, headers=headers)

    assert forbidden.status_code == 403
    assert page.status_code == 200
    body = page.json()
    assert body["page"]["limit"] == 100
    assert body["page"]["offset"] == 0
    assert body["page"]["total"] >= 1
    assert all(user["role"] == "admin" for user in body["data"])
    assert bad_sort.json()["error"]["code"] == "BAD_SORT"
    assert bad_filter.json()["error"]["code"] == "BAD_FILTER"
    assert bad_limit.json()["error"]["fields"] == {"limit": "must be an integer"}
    assert bad_role.status_code == 400


async def test_a_customer_cannot_make_themselves_admin(gateway: httpx.AsyncClient) -> None:
    me, headers = await customer(gateway)

    escalate = await gateway.patch(
        f"/api/users/{me['id']}", json={"role": "admin"}, headers=headers
    )
    sign_up_as_admin = await gateway.post(
        "/api/users", json={"name": "Mallory", "email": new_email(), "role": "admin"}
    )
    rename = await gateway.patch(
        f"/api/users/{me['id']}", json={"name": "Renamed"}, headers=headers
    )

    assert escalate.status_code == sign_up_as_admin.status_code == 403
    assert rename.status_code == 200
    assert rename.json()["data"]["role"] == "customer"
    assert rename.json()["data"]["name"] == "Renamed"


async def test_two_concurrent_sign_ups_with_one_email_give_one_201_and_one_409(
    gateway: httpx.AsyncClient,
) -> None:
    email = new_email()
    body = {"name": "Twin", "email": email, "password": PASSWORD}

    responses = await asyncio.gather(*(gateway.post("/api/users", json=body) for _ in range(2)))

    assert sorted(r.status_code for r in responses) == [201, 409]
    conflict = next(r for r in responses if r.status_code == 409)
    assert conflict.json()["error"]["code"] == "EMAIL_TAKEN"


async def test_a_user_can_delete_their_account_and_its_token_then_finds_nothing(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    me, headers = await customer(gateway)
    path = f"/api/users/{me['id']}"

    token_alone = await gateway.delete(path, headers=headers)
    deleted = await gateway.request(
        "DELETE", path, json={"currentPassword": PASSWORD}, headers=headers
    )
    gone = await gateway.get(path, headers=await admin(gateway, stack))

    assert token_alone.status_code == 400  # a stolen token alone deletes nothing
    assert token_alone.json()["error"]["fields"] == {
        "currentPassword": "is required to delete the account"
    }
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert gone.status_code == 404


@pytest.mark.processes  # calls users- and orders-service's private ports
async def test_services_verify_tokens_themselves(stack: Stack) -> None:
    users_url = stack.services["users"].url
    orders_url = stack.services["orders"].url
    async with httpx.AsyncClient() as client:
        direct_users = await client.get(f"{users_url}/api/users")
        direct_orders = await client.get(f"{orders_url}/orders")
        spoofed = await client.get(
            f"{orders_url}/orders", headers={"X-User-Id": "admin", "X-Role": "admin"}
        )

    assert direct_users.status_code == direct_orders.status_code == spoofed.status_code == 401


async def test_a_stolen_token_cannot_take_the_account_over_through_the_gateway(
    gateway: httpx.AsyncClient,
) -> None:
    """#12: with only the victim's token, changing their password or email is refused."""
    victim, token = await customer(gateway)
    password = await gateway.patch(
        f"/api/users/{victim['id']}", json={"password": "attacker-owns-it"}, headers=token
    )
    email = await gateway.patch(
        f"/api/users/{victim['id']}",
        json={"email": new_email(), "currentPassword": "a-guess-at-it"},
        headers=token,
    )
    owner = await gateway.patch(
        f"/api/users/{victim['id']}",
        json={"password": "owner-changes-it", "currentPassword": PASSWORD},
        headers=token,
    )

    assert password.status_code == 400
    assert password.json()["error"]["fields"] == {
        "currentPassword": "is required to change the password or email"
    }
    assert email.status_code == 401
    assert email.json()["error"]["code"] == "INVALID_CREDENTIALS"
    assert owner.status_code == 200
