"""Sessions through the gateway: refresh-token rotation, reuse detection, the refresh race,
logout, password changes, the sessions list, suspension (users-service/README.md)."""

from __future__ import annotations

import asyncio
import ipaddress
import uuid
from typing import Any

import httpx
import pytest

from api_testkit.actors import PASSWORD, admin, log_in, sign_up
from api_testkit.callers import bearer
from api_testkit.sessions import assert_invalid_credentials, refresh, rotate
from api_testkit.stack import Stack
from api_testkit.tokens import unverified_claims

RACERS = 6


async def account(gateway: httpx.AsyncClient) -> tuple[dict[str, Any], str]:
    email = f"session-{uuid.uuid4().hex[:10]}@example.com"
    return await sign_up(gateway, email=email, password=PASSWORD), email


async def me(gateway: httpx.AsyncClient, tokens: dict[str, Any]) -> httpx.Response:
    return await gateway.get("/api/users/me", headers=bearer(tokens["accessToken"]))


@pytest.mark.smoke
async def test_rotation_reuse_detection_and_logout(gateway: httpx.AsyncClient) -> None:
    user, email = await account(gateway)
    first = await log_in(gateway, email)
    assert first["refreshExpiresIn"] == 30 * 24 * 3600

    latest = (await rotate(gateway, first, 3))[-1]
    assert (await me(gateway, latest)).json()["data"]["id"] == user["id"]

    # The first token, replayed (by a thief, say): refused, and the session is over...
    assert_invalid_credentials(await refresh(gateway, first["refreshToken"]))
    # ...for the holder of the latest token too.
    assert_invalid_credentials(await refresh(gateway, latest["refreshToken"]))
    assert (await me(gateway, latest)).status_code == 401

    again = await log_in(gateway, email)
    assert (await me(gateway, again)).status_code == 200
    logout = await gateway.post("/api/auth/logout", json={"refreshToken": again["refreshToken"]})
    assert logout.status_code == 204
    assert_invalid_credentials(await refresh(gateway, again["refreshToken"]))
    assert (await me(gateway, again)).status_code == 401


async def test_of_concurrent_refreshes_with_one_token_exactly_one_wins(
    stack: Stack,
) -> None:
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=15.0) as gateway:
        _, email = await account(gateway)
        tokens = await log_in(gateway, email)

    async def racer() -> int:
        async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=15.0) as own:
            return (await refresh(own, tokens["refreshToken"])).status_code

    statuses = sorted(await asyncio.gather(*(racer() for _ in range(RACERS))))

    assert statuses == [200] + [401] * (RACERS - 1)


async def test_changing_the_password_ends_the_other_sessions(gateway: httpx.AsyncClient) -> None:
    user, email = await account(gateway)
    here, elsewhere = await log_in(gateway, email), await log_in(gateway, email)

    changed = await gateway.patch(
        f"/api/users/{user['id']}",
        json={"password": "another good password", "currentPassword": PASSWORD},
        headers=bearer(here["accessToken"]),
    )

    assert changed.status_code == 200, changed.text
    assert (await me(gateway, here)).status_code == 200
    assert (await refresh(gateway, here["refreshToken"])).status_code == 200
    assert_invalid_credentials(await refresh(gateway, elsewhere["refreshToken"]))
    assert (await me(gateway, elsewhere)).status_code == 401


async def test_the_sessions_list_and_ending_one(gateway: httpx.AsyncClient) -> None:
    _, email = await account(gateway)
    _, other_email = await account(gateway)
    phone = await log_in(gateway, email, **{"User-Agent": "phone/1.0"})
    laptop = await log_in(gateway, email, **{"User-Agent": "laptop/2.0"})
    theirs = await log_in(gateway, other_email)

    listed = await gateway.get("/api/auth/sessions", headers=bearer(laptop["accessToken"]))

    assert listed.status_code == 200, listed.text
    assert listed.json()["page"] == {"total": 2, "limit": 20, "offset": 0}
    agents = {item["userAgent"]: item for item in listed.json()["data"]}
    assert set(agents) == {"phone/1.0", "laptop/2.0"}
    assert agents["laptop/2.0"]["current"] is True
    # The client's address as the gateway resolved it (127.0.0.1 here, the Docker bridge's
    # address in front of the compose stack): the same for both logins.
    address = agents["phone/1.0"]["address"]
    assert ipaddress.ip_address(address).is_private
    assert agents["laptop/2.0"]["address"] == address
    others = await gateway.delete(
        f"/api/auth/sessions/{unverified_claims(theirs['accessToken'])['sid']}",
        headers=bearer(laptop["accessToken"]),
    )
    assert others.status_code == 404
    assert (await gateway.get("/api/auth/sessions")).status_code == 401

    ended = await gateway.delete(
        f"/api/auth/sessions/{agents['phone/1.0']['id']}", headers=bearer(laptop["accessToken"])
    )

    assert ended.status_code == 204
    assert_invalid_credentials(await refresh(gateway, phone["refreshToken"]))
    assert (await refresh(gateway, theirs["refreshToken"])).status_code == 200
    after = await gateway.get("/api/auth/sessions", headers=bearer(laptop["accessToken"]))
    assert [item["userAgent"] for item in after.json()["data"]] == ["laptop/2.0"]


async def test_logout_all_ends_every_session(gateway: httpx.AsyncClient) -> None:
    _, email = await account(gateway)
    sessions = [await log_in(gateway, email) for _ in range(3)]

    response = await gateway.post(
        "/api/auth/logout-all", headers=bearer(sessions[0]["accessToken"])
    )

    assert response.status_code == 204
    for tokens in sessions:
        assert_invalid_credentials(await refresh(gateway, tokens["refreshToken"]))


async def test_suspension_and_its_lifting(gateway: httpx.AsyncClient, stack: Stack) -> None:
    user, email = await account(gateway)
    tokens = await log_in(gateway, email)
    by_admin = await admin(gateway, stack)

    suspended = await gateway.patch(
        f"/api/users/{user['id']}", json={"isActive": False}, headers=by_admin
    )

    assert suspended.status_code == 200, suspended.text
    assert suspended.json()["data"]["isActive"] is False
    wrong = await gateway.post("/api/auth/token", json={"email": email, "password": "a guess!"})
    assert wrong.status_code == 401
    right = await gateway.post("/api/auth/token", json={"email": email, "password": PASSWORD})
    assert right.status_code == 403
    assert right.json()["error"]["code"] == "FORBIDDEN"
    assert "suspended" in right.json()["error"]["message"]
    assert (await refresh(gateway, tokens["refreshToken"])).status_code == 403
    assert (await me(gateway, tokens)).status_code == 403
    listed = await gateway.get("/api/users?isActive=false&limit=100", headers=by_admin)
    assert user["id"] in [item["id"] for item in listed.json()["data"]]

    lifted = await gateway.patch(
        f"/api/users/{user['id']}", json={"isActive": True}, headers=by_admin
    )

    assert lifted.json()["data"]["isActive"] is True
    back = await log_in(gateway, email)
    assert (await me(gateway, back)).status_code == 200
    # Old sessions stay ended.
    assert_invalid_credentials(await refresh(gateway, tokens["refreshToken"]))


async def test_an_ended_sessions_access_token_is_refused_by_users_service_only(
    gateway: httpx.AsyncClient,
) -> None:
    # Documented: access tokens stay stateless; only users-service reads sessions. Elsewhere
    # a token of an ended session works until it expires (ACCESS_TOKEN_TTL_S).
    user, email = await account(gateway)
    tokens = await log_in(gateway, email)
    await gateway.post("/api/auth/logout", json={"refreshToken": tokens["refreshToken"]})

    orders = await gateway.get("/orders", headers=bearer(tokens["accessToken"]))
    own_orders = await gateway.get(
        f"/users/{user['id']}/orders", headers=bearer(tokens["accessToken"])
    )

    assert (await me(gateway, tokens)).status_code == 401
    assert orders.status_code == 200
    assert own_orders.status_code == 200


async def test_the_merged_document_shows_every_session_operation(
    gateway: httpx.AsyncClient,
) -> None:
    paths = (await gateway.get("/openapi.json")).json()["paths"]

    operations = {
        (path, method): operation["operationId"]
        for path, methods in paths.items()
        for method, operation in methods.items()
        if isinstance(operation, dict) and "operationId" in operation
    }
    assert {
        ("/api/auth/refresh", "post"): "refreshToken",
        ("/api/auth/logout", "post"): "logOut",
        ("/api/auth/logout-all", "post"): "logOutEverywhere",
        ("/api/auth/sessions", "get"): "listSessions",
        ("/api/auth/sessions/{session_id}", "delete"): "endSession",
        ("/api/users/me", "get"): "getMe",
    }.items() <= operations.items()
    token = paths["/api/auth/token"]["post"]["responses"]
    assert {"200", "401", "403", "429"} <= set(token)
    listing = paths["/api/users"]["get"]["parameters"]
    assert "isActive" in {parameter["name"] for parameter in listing}
    assert "401" in paths["/api/auth/logout-all"]["post"]["responses"]
