"""The noun forms of the token and session routes (docs/api.md#sessions), and the deprecated
verb paths they replace, which answer as before with Deprecation, Sunset and Link."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from api_testkit import actors
from api_testkit.callers import bearer
from api_testkit.sessions import assert_invalid_credentials

NewAccount = Any  # the conftest fixture: async (role=..., name=...) -> Account
Account = Any

DEPRECATION = "@1795737600"  # 2026-11-27T00:00:00Z, the day the noun forms landed
SUNSET = "Thu, 27 May 2027 00:00:00 GMT"


async def log_in(client: httpx.AsyncClient, account: Account) -> dict[str, Any]:
    return await actors.log_in(client, account.email, account.password)


async def refresh_grant(client: httpx.AsyncClient, token: str) -> httpx.Response:
    body = {"grantType": "refresh_token", "refreshToken": token}
    return await client.post("/api/auth/token", json=body)


async def me(client: httpx.AsyncClient, tokens: dict[str, Any]) -> httpx.Response:
    return await client.get("/api/users/me", headers=bearer(tokens["accessToken"]))


def assert_deprecated(response: httpx.Response, successor: str) -> None:
    assert response.headers["deprecation"] == DEPRECATION
    assert response.headers["sunset"] == SUNSET
    assert response.headers["link"] == f'<{successor}>; rel="successor-version"'


async def test_the_refresh_grant_rotates_and_a_replay_ends_the_session(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    tokens = await log_in(client, await new_account())

    renewed = await refresh_grant(client, tokens["refreshToken"])

    assert renewed.status_code == 200, renewed.text
    assert renewed.headers["cache-control"] == "no-store"
    assert "deprecation" not in renewed.headers
    pair = renewed.json()["data"]
    assert pair["tokenType"] == "Bearer"
    assert pair["refreshToken"] != tokens["refreshToken"]
    assert (await me(client, pair)).status_code == 200
    # The spent token again: refused, and the session is over for its latest holder too.
    assert_invalid_credentials(await refresh_grant(client, tokens["refreshToken"]))
    assert_invalid_credentials(await refresh_grant(client, pair["refreshToken"]))
    assert (await me(client, pair)).status_code == 401


async def test_the_password_grant_logs_in_with_or_without_grant_type(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account = await new_account()
    credentials = {"email": account.email, "password": account.password}

    for body in (credentials, {"grantType": "password", **credentials}):
        response = await client.post("/api/auth/token", json=body)
        assert response.status_code == 200, response.text
        assert (await me(client, response.json()["data"])).status_code == 200
    wrong = await client.post(
        "/api/auth/token", json={"grantType": "password", "email": account.email, "password": "x"}
    )
    assert_invalid_credentials(wrong)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (
            {"grantType": "client_credentials", "email": "a@example.com", "password": "x"},
            "grantType",
        ),
        ({"grantType": None, "email": "a@example.com", "password": "x"}, "grantType"),
        ({"grantType": "refresh_token"}, "refreshToken"),
        ({"grantType": "refresh_token", "refreshToken": 5}, "refreshToken"),
        ({"grantType": "refresh_token", "refreshToken": "x", "email": "a@example.com"}, "email"),
        ({"refreshToken": "x"}, "refreshToken"),
    ],
    ids=["unknown-grant", "null-grant", "no-token", "number", "mixed-grants", "no-grant-type"],
)
async def test_a_grant_that_is_not_one_is_400_naming_the_field(
    client: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    response = await client.post("/api/auth/token", json=body)

    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_FAILED"
    assert field in error["fields"]


async def test_deleting_the_current_session_logs_out_only_that_session(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account = await new_account()
    tokens, other = await log_in(client, account), await log_in(client, account)

    response = await client.delete(
        "/api/auth/sessions/current", headers=bearer(tokens["accessToken"])
    )

    assert response.status_code == 204
    assert response.content == b""
    assert (await me(client, tokens)).status_code == 401
    assert_invalid_credentials(await refresh_grant(client, tokens["refreshToken"]))
    assert (await me(client, other)).status_code == 200
    assert (await client.delete("/api/auth/sessions/current")).status_code == 401


async def test_deleting_the_sessions_ends_every_session_of_the_caller(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account, someone = await new_account(), await new_account()
    mine = [await log_in(client, account) for _ in range(3)]
    theirs = await log_in(client, someone)

    response = await client.delete("/api/auth/sessions", headers=bearer(mine[0]["accessToken"]))

    assert response.status_code == 204
    for tokens in mine:
        assert_invalid_credentials(await refresh_grant(client, tokens["refreshToken"]))
        assert (await me(client, tokens)).status_code == 401
    assert (await me(client, theirs)).status_code == 200
    assert (await client.delete("/api/auth/sessions")).status_code == 401


async def test_the_deprecated_refresh_answers_as_before_and_names_its_successor(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    tokens = await log_in(client, await new_account())
    body = {"refreshToken": tokens["refreshToken"]}

    renewed = await client.post("/api/auth/refresh", json=body)
    spent = await client.post("/api/auth/refresh", json=body)
    malformed = await client.post("/api/auth/refresh", json={})

    assert renewed.status_code == 200, renewed.text
    assert renewed.headers["cache-control"] == "no-store"
    assert set(renewed.json()["data"]) >= {"accessToken", "refreshToken", "refreshExpiresIn"}
    assert_invalid_credentials(spent)
    assert malformed.status_code == 400
    for response in (renewed, spent, malformed):  # errors say so too
        assert_deprecated(response, "/api/auth/token")


async def test_the_deprecated_logouts_answer_as_before_and_name_their_successors(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account = await new_account()
    one, two = await log_in(client, account), await log_in(client, account)

    logout = await client.post("/api/auth/logout", json={"refreshToken": one["refreshToken"]})
    assert logout.status_code == 204
    assert_deprecated(logout, "/api/auth/sessions/current")
    assert (await me(client, one)).status_code == 401

    everywhere = await client.post("/api/auth/logout-all", headers=bearer(two["accessToken"]))
    assert everywhere.status_code == 204
    assert_deprecated(everywhere, "/api/auth/sessions")
    assert (await me(client, two)).status_code == 401
    refused = await client.post("/api/auth/logout-all", headers=bearer(two["accessToken"]))
    assert refused.status_code == 401
    assert_deprecated(refused, "/api/auth/sessions")
