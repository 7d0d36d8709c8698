"""Sessions as a client sees them: refreshing, and the refusal of a token that is no good."""

from __future__ import annotations

from typing import Any

import httpx


async def refresh(client: httpx.AsyncClient, token: str) -> httpx.Response:
    """``POST /api/auth/refresh`` with that refresh token."""
    return await client.post("/api/auth/refresh", json={"refreshToken": token})


def assert_invalid_credentials(response: httpx.Response) -> None:
    """401 INVALID_CREDENTIALS: a spent, revoked or unknown refresh token, or a bad password."""
    assert response.status_code == 401, response.text
    assert response.json()["error"]["code"] == "INVALID_CREDENTIALS"


async def rotate(
    client: httpx.AsyncClient, tokens: dict[str, Any], times: int
) -> list[dict[str, Any]]:
    """Refresh ``times`` in a row, each time with the newest refresh token, as a client does;
    every answer must be a new pair, never cached. Returns the pairs, oldest first."""
    pairs = [tokens]
    for _ in range(times):
        response = await refresh(client, pairs[-1]["refreshToken"])
        assert response.status_code == 200, response.text
        assert response.headers["cache-control"] == "no-store"
        pairs.append(response.json()["data"])
    return pairs[1:]
