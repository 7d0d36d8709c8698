"""Attacks of #12 on the users API, over real HTTP with real signed tokens and a real database."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest

NewAccount = Any  # the conftest fixture: async (role=..., name=...) -> Account
Account = Any

MEGABYTE_EMAIL = "a" * 1_000_000 + "@example.com"
LONG_EMAIL = "a" * 15_000 + "@example.com"  # fits the 16 KiB body limit, not RFC 5321


def error_of(response: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["error"]
    return error


# --- huge emails ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "email",
    [LONG_EMAIL, "a" * 65 + "@example.com", "a@" + "b" * 250 + ".com"],
    ids=["15-kB", "65-character-local-part", "256-character-address"],
)
async def test_an_email_longer_than_rfc_5321_allows_is_400_on_every_route_that_takes_one(
    client: httpx.AsyncClient, new_account: NewAccount, email: str
) -> None:
    me = await new_account()

    sign_up = await client.post("/api/users", json={"name": "Long", "email": email})
    patch = await client.patch(
        f"/api/users/{me.id}",
        json={"email": email, "currentPassword": me.password},
        headers=me.headers,
    )
    login = await client.post("/api/auth/token", json={"email": email, "password": "whatever1"})

    for response in (sign_up, patch, login):
        assert response.status_code == 400, response.text
        assert error_of(response)["code"] == "VALIDATION_FAILED"
        assert set(error_of(response)["fields"]) == {"email"}


async def test_a_megabyte_email_is_413_in_the_contract_shape_and_the_service_stays_responsive(
    client: httpx.AsyncClient,
) -> None:
    body = {"email": MEGABYTE_EMAIL, "password": "whatever1"}

    floods = await asyncio.gather(
        *(client.post("/api/auth/token", json=body) for _ in range(10)),
        *(client.post("/api/users", json={"name": "Big", **body}) for _ in range(10)),
    )
    health = await client.get("/health")

    assert {response.status_code for response in floods} == {413}
    assert {error_of(response)["code"] for response in floods} == {"PAYLOAD_TOO_LARGE"}
    assert health.status_code == 200


# --- a stolen token ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change", [{"password": "attackers-password"}, {"email": "attacker@example.com"}]
)
async def test_a_stolen_token_alone_cannot_change_the_password_or_the_email(
    client: httpx.AsyncClient, new_account: NewAccount, change: dict[str, str]
) -> None:
    victim = await new_account()

    without = await client.patch(f"/api/users/{victim.id}", json=change, headers=victim.headers)
    wrong = await client.patch(
        f"/api/users/{victim.id}",
        json={**change, "currentPassword": "a-guess-123"},
        headers=victim.headers,
    )
    login = await client.post(
        "/api/auth/token", json={"email": victim.email, "password": victim.password}
    )

    assert without.status_code == 400
    assert error_of(without)["code"] == "VALIDATION_FAILED"
    assert set(error_of(without)["fields"]) == {"currentPassword"}
    assert wrong.status_code == 401
    assert error_of(wrong)["code"] == "INVALID_CREDENTIALS"
    assert login.status_code == 200  # the owner still logs in as before


async def test_the_owner_changes_their_password_with_the_current_one(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()

    response = await client.patch(
        f"/api/users/{me.id}",
        json={"password": "my-new-password", "currentPassword": me.password},
        headers=me.headers,
    )
    login = await client.post(
        "/api/auth/token", json={"email": me.email, "password": "my-new-password"}
    )

    assert (response.status_code, login.status_code) == (200, 200)


async def test_an_admin_changes_another_users_password_without_theirs_but_not_its_own(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    admin, customer = await new_account("admin"), await new_account()

    other = await client.patch(
        f"/api/users/{customer.id}", json={"password": "reset-by-admin"}, headers=admin.headers
    )
    own = await client.patch(
        f"/api/users/{admin.id}", json={"password": "admins-new-one"}, headers=admin.headers
    )

    assert other.status_code == 200
    assert own.status_code == 400
    assert set(error_of(own)["fields"]) == {"currentPassword"}


async def test_a_current_password_is_not_needed_to_change_only_the_name(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()

    response = await client.patch(
        f"/api/users/{me.id}", json={"name": "Renamed", "email": me.email}, headers=me.headers
    )

    assert response.status_code == 200


# --- roles from the database, not the token ---------------------------------------------------


async def test_a_demoted_admin_cannot_use_its_still_valid_token_to_act_as_admin(
    client: httpx.AsyncClient, admin: Account, new_account: NewAccount
) -> None:
    demoted, customer = await new_account("admin"), await new_account()
    demotion = await client.patch(
        f"/api/users/{demoted.id}", json={"role": "customer"}, headers=admin.headers
    )

    repromote = await client.patch(
        f"/api/users/{demoted.id}", json={"role": "admin"}, headers=demoted.headers
    )
    listing = await client.get("/api/users", headers=demoted.headers)
    read_other = await client.get(f"/api/users/{customer.id}", headers=demoted.headers)
    delete_other = await client.delete(f"/api/users/{customer.id}", headers=demoted.headers)
    new_admin = await client.post(
        "/api/users", json={"name": "Mine", "role": "admin"}, headers=demoted.headers
    )

    assert demotion.status_code == 200
    # A role change ends the user's sessions: the token is refused outright (401). Were its
    # session still open, the row's role would refuse it (403: test_services.py).
    for response in (repromote, listing, read_other, delete_other, new_admin):
        assert response.status_code == 401, response.text
    assert (await client.get(f"/api/users/{customer.id}", headers=admin.headers)).status_code == 200


async def test_a_deleted_users_token_is_refused_with_401(
    client: httpx.AsyncClient, admin: Account, new_account: NewAccount
) -> None:
    gone = await new_account("admin")
    deleted = await client.delete(f"/api/users/{gone.id}", headers=admin.headers)

    responses = [
        await client.get(f"/api/users/{gone.id}", headers=gone.headers),
        await client.get("/api/users", headers=gone.headers),
        await client.patch(
            f"/api/users/{admin.id}", json={"role": "customer"}, headers=gone.headers
        ),
        await client.post(
            "/api/users",
            json={"name": f"Back {uuid.uuid4().hex[:4]}", "role": "admin"},
            headers=gone.headers,
        ),
    ]

    assert deleted.status_code == 204
    for response in responses:
        assert response.status_code == 401, response.text
        assert error_of(response)["code"] == "UNAUTHENTICATED"
        assert response.headers["www-authenticate"] == 'Bearer error="invalid_token"'
