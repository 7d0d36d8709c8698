"""docs/api.md#deprecated-routes through the gateway: each noun form works, and each verb
path it replaces still answers as before, with Deprecation, Sunset and Link."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from api_testkit.actors import PASSWORD, admin, log_in, new_email, sign_up
from api_testkit.callers import bearer
from api_testkit.events import eventually
from api_testkit.sessions import assert_invalid_credentials
from api_testkit.stack import Stack
from api_testkit.webhooks import webhook_receiver

DEPRECATION = "@1795737600"  # 2026-11-27T00:00:00Z
SUNSET = "Thu, 27 May 2027 00:00:00 GMT"
NOUNS = pytest.mark.needs(users_service="1.2.0", gateway="1.2.0", webhooks_service="1.1.0")


def assert_deprecated(response: httpx.Response, successor: str) -> None:
    assert response.headers["deprecation"] == DEPRECATION
    assert response.headers["sunset"] == SUNSET
    assert response.headers["link"] == f'<{successor}>; rel="successor-version"'


async def account(gateway: httpx.AsyncClient) -> str:
    email = new_email("nouns")
    await sign_up(gateway, email=email, password=PASSWORD)
    return email


async def me(gateway: httpx.AsyncClient, tokens: dict[str, Any]) -> int:
    return (await gateway.get("/api/users/me", headers=bearer(tokens["accessToken"]))).status_code


@NOUNS
async def test_refresh_grant_and_session_deletes_through_the_gateway(
    gateway: httpx.AsyncClient,
) -> None:
    email = await account(gateway)
    first, second, third = [await log_in(gateway, email) for _ in range(3)]

    renewed = await gateway.post(
        "/api/auth/token",
        json={"grantType": "refresh_token", "refreshToken": first["refreshToken"]},
    )
    assert renewed.status_code == 200, renewed.text
    assert "deprecation" not in renewed.headers
    current = renewed.json()["data"]
    assert await me(gateway, current) == 200

    logout = await gateway.delete(
        "/api/auth/sessions/current", headers=bearer(current["accessToken"])
    )
    assert logout.status_code == 204
    assert await me(gateway, current) == 401
    assert await me(gateway, second) == 200
    assert (await gateway.delete("/api/auth/sessions/current")).status_code == 401

    everywhere = await gateway.delete("/api/auth/sessions", headers=bearer(second["accessToken"]))
    assert everywhere.status_code == 204
    assert await me(gateway, second) == 401
    assert await me(gateway, third) == 401


@NOUNS
async def test_the_deprecated_session_paths_answer_with_their_successors(
    gateway: httpx.AsyncClient,
) -> None:
    email = await account(gateway)
    one, two = await log_in(gateway, email), await log_in(gateway, email)

    renewed = await gateway.post("/api/auth/refresh", json={"refreshToken": one["refreshToken"]})
    assert renewed.status_code == 200, renewed.text
    assert_deprecated(renewed, "/api/auth/token")
    spent = await gateway.post("/api/auth/refresh", json={"refreshToken": one["refreshToken"]})
    assert_invalid_credentials(spent)
    assert_deprecated(spent, "/api/auth/token")

    logout = await gateway.post("/api/auth/logout", json={"refreshToken": two["refreshToken"]})
    assert logout.status_code == 204
    assert_deprecated(logout, "/api/auth/sessions/current")
    assert await me(gateway, two) == 401

    three = await log_in(gateway, email)
    everywhere = await gateway.post("/api/auth/logout-all", headers=bearer(three["accessToken"]))
    assert everywhere.status_code == 204
    assert_deprecated(everywhere, "/api/auth/sessions")
    assert await me(gateway, three) == 401


@NOUNS
@pytest.mark.processes  # the receiver listens on this machine's loopback
async def test_webhook_secrets_and_attempts_and_their_deprecated_paths(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    headers = await admin(gateway, stack)
    async with webhook_receiver() as hook:
        created = await gateway.post(
            "/api/webhooks",
            json={"url": hook.url(), "eventTypes": ["users.user.created"]},
            headers=headers,
        )
        assert created.status_code == 201, created.text
        endpoint = created.json()["data"]
        base = f"/api/webhooks/{endpoint['id']}"

        secret = await gateway.post(f"{base}/secrets", json={"graceSeconds": 0}, headers=headers)
        assert secret.status_code == 200, secret.text
        assert "deprecation" not in secret.headers
        rotated = await gateway.post(f"{base}/rotate-secret", headers=headers)
        assert rotated.status_code == 200, rotated.text
        assert rotated.json()["data"]["secret"] != secret.json()["data"]["secret"]
        assert_deprecated(rotated, f"{base}/secrets")

        await account(gateway)  # a users.user.created event for the endpoint

        async def deliveries() -> list[dict[str, Any]]:
            listed = await gateway.get(f"{base}/deliveries", headers=headers)
            rows: list[dict[str, Any]] = listed.json()["data"]
            return rows

        async def one_delivered() -> bool:
            return any(row["status"] == "delivered" for row in await deliveries())

        await eventually(one_delivered, "a delivery to the endpoint")
        delivery = next(row for row in await deliveries() if row["status"] == "delivered")
        path = f"{base}/deliveries/{delivery['id']}"

        attempt = await gateway.post(f"{path}/attempts", headers=headers)
        assert attempt.status_code == 202, attempt.text
        assert attempt.json()["data"]["status"] == "pending"
        assert "deprecation" not in attempt.headers

        async def delivered_again() -> bool:
            row = next(row for row in await deliveries() if row["id"] == delivery["id"])
            return bool(row["status"] == "delivered" and len(row["attempts"]) >= 2)

        await eventually(delivered_again, "the new attempt delivered")
        replay = await gateway.post(f"{path}/replay", headers=headers)
        assert replay.status_code == 202, replay.text
        assert replay.json()["data"]["status"] == "pending"
        assert_deprecated(replay, f"{path}/attempts")
