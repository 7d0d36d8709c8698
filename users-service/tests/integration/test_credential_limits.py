"""users-service's own budgets (users_service.budgets), attacked over HTTP on a process of
their own with low limits: failed logins per account however the email is spelt, guesses at
a current password, password work per address, refreshes per session.

The client address is what the gateway sends in X-Real-IP; here the tests send it, as many
addresses as they need.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

ProcessLauncher = Any  # the conftest fixture


ACCOUNT_PER_ADDRESS, ACCOUNT_CEILING = 3, 5
CURRENT_PASSWORD_FAILURES = 4
CREDENTIAL_CHANGES = 6
REFRESHES_PER_SESSION = 3
LIMITS = {
    "LOGIN_ACCOUNT_RATE_LIMIT_PER_MINUTE": str(ACCOUNT_PER_ADDRESS),
    "LOGIN_ACCOUNT_CEILING_PER_MINUTE": str(ACCOUNT_CEILING),
    "CURRENT_PASSWORD_FAILURE_LIMIT": str(CURRENT_PASSWORD_FAILURES),
    "CREDENTIAL_CHANGE_RATE_LIMIT_PER_MINUTE": str(CREDENTIAL_CHANGES),
    "REFRESH_SESSION_RATE_LIMIT_PER_MINUTE": str(REFRESHES_PER_SESSION),
}
PASSWORD = "the owner's password"


def address() -> dict[str, str]:
    """A client address never used before, as the gateway would send it."""
    suffix = uuid.uuid4().hex
    return {"X-Real-IP": f"2001:db8:{suffix[:4]}:{suffix[4:8]}::1"}


@pytest.fixture(scope="module")
async def users(module_launcher: ProcessLauncher) -> AsyncIterator[httpx.AsyncClient]:
    """One process for the module: every test uses accounts and addresses of its own."""
    async with (
        module_launcher.running(**LIMITS) as service,
        httpx.AsyncClient(base_url=service.url, timeout=30.0) as client,
    ):
        yield client


async def an_account(users: httpx.AsyncClient) -> dict[str, str]:
    email = f"owner-{uuid.uuid4().hex[:10]}@example.com"
    created = await users.post(
        "/api/users", json={"name": "Owner", "email": email, "password": PASSWORD}
    )
    assert created.status_code == 201, created.text
    login = await users.post("/api/auth/token", json={"email": email, "password": PASSWORD})
    assert login.status_code == 200, login.text
    tokens = login.json()["data"]
    return {
        "id": created.json()["data"]["id"],
        "email": email,
        "token": tokens["accessToken"],
        "refresh": tokens["refreshToken"],
    }


def bearer(account: dict[str, str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {account['token']}"}


async def test_every_spelling_of_one_account_draws_from_its_one_ceiling(
    users: httpx.AsyncClient,
) -> None:
    """The attack: ``admin@exa\\u034fmple.com`` and ~260 other code points UTS #46 ignores
    name one account here; each spelling was a fresh bucket at the gateway."""
    account = await an_account(users)
    local, domain = account["email"].split("@")
    ideographic = domain.replace(".", "\u3002")
    spellings = [
        account["email"],
        account["email"].upper(),
        f"{local}@{domain[:3]}\u034f{domain[3:]}",  # combining grapheme joiner
        f"{local}@{domain[:2]}\ufe00{domain[2:]}",  # variation selector 1
        f"{local}@{ideographic}",  # ideographic full stops
        f"  {local}@{domain.upper()} ",
        f"{local}@{domain[:1]}\u034f{domain[1:5]}\ufe0f{domain[5:]}",  # two ignored
    ]
    statuses = [
        (
            await users.post(
                "/api/auth/token",
                json={"email": spelling, "password": "a guess"},
                headers=address(),
            )
        ).status_code
        for spelling in spellings
    ]

    assert statuses == [401] * ACCOUNT_CEILING + [429] * (len(spellings) - ACCOUNT_CEILING)


async def test_one_attacker_address_cannot_lock_the_owner_out(users: httpx.AsyncClient) -> None:
    account = await an_account(users)
    attacker = address()
    guesses = [
        await users.post(
            "/api/auth/token",
            json={"email": account["email"], "password": "a guess"},
            headers=attacker,
        )
        for _ in range(ACCOUNT_PER_ADDRESS + 1)
    ]
    owner = await users.post(
        "/api/auth/token",
        json={"email": account["email"], "password": PASSWORD},
        headers=address(),
    )

    assert [g.status_code for g in guesses] == [401] * ACCOUNT_PER_ADDRESS + [429]
    refused = guesses[-1]
    assert refused.json()["error"]["code"] == "RATE_LIMITED"
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.headers["ratelimit-policy"] == f'"login-account";q={ACCOUNT_PER_ADDRESS};w=60'
    assert owner.status_code == 200


async def test_right_passwords_never_use_up_the_accounts_budget(users: httpx.AsyncClient) -> None:
    account = await an_account(users)
    here = address()
    for _ in range(ACCOUNT_CEILING + 2):
        login = await users.post(
            "/api/auth/token", json={"email": account["email"], "password": PASSWORD}, headers=here
        )
        assert login.status_code == 200

    wrong = [
        (
            await users.post(
                "/api/auth/token",
                json={"email": account["email"], "password": "a guess"},
                headers=here,
            )
        ).status_code
        for _ in range(ACCOUNT_PER_ADDRESS + 1)
    ]
    assert wrong == [401] * ACCOUNT_PER_ADDRESS + [429]


async def test_an_unknown_email_is_limited_like_an_account_so_429_tells_no_one_apart(
    users: httpx.AsyncClient,
) -> None:
    ghost = f"nobody-{uuid.uuid4().hex[:8]}@example.com"
    statuses = [
        (
            await users.post(
                "/api/auth/token",
                json={"email": ghost.upper() if n % 2 else ghost, "password": "a guess"},
                headers=address(),
            )
        ).status_code
        for n in range(ACCOUNT_CEILING + 1)
    ]

    assert statuses == [401] * ACCOUNT_CEILING + [429]


async def test_a_stolen_token_guessing_the_current_password_is_stopped_for_the_account(
    users: httpx.AsyncClient,
) -> None:
    """The attack: PATCH with an email change and a guessed ``currentPassword``, spread
    over addresses (each guess an Argon2 verification, and an oracle for the password)."""
    account = await an_account(users)
    guesses = [
        await users.patch(
            f"/api/users/{account['id']}",
            json={"email": f"new-{n}@example.com", "currentPassword": f"guess {n}"},
            headers=bearer(account) | address(),
        )
        for n in range(CURRENT_PASSWORD_FAILURES + 2)
    ]
    right_after = await users.patch(
        f"/api/users/{account['id']}",
        json={"name": "Still me", "email": "mine@example.com", "currentPassword": PASSWORD},
        headers=bearer(account) | address(),
    )

    statuses = [g.status_code for g in guesses]
    assert statuses == [401] * CURRENT_PASSWORD_FAILURES + [429, 429]
    assert guesses[-1].headers["ratelimit-policy"].startswith('"current-password";')
    # The budget is spent for everyone: the right password waits too, until it refills.
    assert right_after.status_code == 429
    me = await users.get("/api/users/me", headers=bearer(account))
    assert me.json()["data"]["email"] == account["email"]  # nothing changed


async def test_password_work_from_one_address_is_limited_whatever_path_or_account(
    users: httpx.AsyncClient,
) -> None:
    """The attack: real password changes sent to ``/api/users/{id}//`` and email changes
    with ``currentPassword``, from one address: each is Argon2 work, whatever the path."""
    accounts = [await an_account(users) for _ in range(2)]
    attacker = address()
    statuses = []
    for n in range(CREDENTIAL_CHANGES + 2):
        account = accounts[n % 2]
        path = f"/api/users/{account['id']}" + "/" * (n % 3)
        body = (
            {"password": f"new password {n}", "currentPassword": "wrong"}
            if n % 2
            else {"email": f"x-{n}-{uuid.uuid4().hex[:6]}@example.com", "currentPassword": "no"}
        )
        response = await users.patch(path, json=body, headers=bearer(account) | attacker)
        statuses.append(response.status_code)
    elsewhere = await users.patch(
        f"/api/users/{accounts[0]['id']}",
        json={"name": "Renamed"},
        headers=bearer(accounts[0]) | attacker,
    )

    assert statuses == [401] * CREDENTIAL_CHANGES + [429, 429]
    assert elsewhere.status_code == 200  # no password work: not this budget


async def test_a_stranger_who_knows_a_session_id_cannot_spend_its_refreshes(
    users: httpx.AsyncClient,
) -> None:
    """The attack: junk refresh tokens naming someone's session (the id is in every access
    token) kept the owner's refreshes at 429."""
    account = await an_account(users)
    session = account["refresh"].split(".", 1)[0]
    junk = [
        (
            await users.post(
                "/api/auth/refresh",
                json={"refreshToken": f"{session}.{uuid.uuid4().hex}{uuid.uuid4().hex[:11]}"},
                headers=address(),
            )
        ).status_code
        for _ in range(REFRESHES_PER_SESSION + 3)
    ]
    owners = []
    token = account["refresh"]
    for _ in range(REFRESHES_PER_SESSION + 1):
        response = await users.post("/api/auth/refresh", json={"refreshToken": token})
        owners.append(response.status_code)
        if response.status_code == 200:
            token = response.json()["data"]["refreshToken"]

    assert junk == [401] * (REFRESHES_PER_SESSION + 3)
    # The owner's own refreshes are the session's budget, and only theirs count.
    assert owners == [200] * REFRESHES_PER_SESSION + [429]
