"""API keys made through the API (``POST /api/api-keys``)."""

from __future__ import annotations

from typing import Any

import httpx

from .callers import bearer


async def create_key(
    client: httpx.AsyncClient, headers: dict[str, str], *scopes: str, name: str = "a script"
) -> dict[str, Any]:
    """A new key with ``scopes``, made by the caller of ``headers``: its document, ``secret``
    included (the one answer that shows it)."""
    response = await client.post(
        "/api/api-keys", json={"name": name, "scopes": list(scopes)}, headers=headers
    )
    assert response.status_code == 201, response.text
    key: dict[str, Any] = response.json()["data"]
    return key


def key_headers(key: dict[str, Any]) -> dict[str, str]:
    """The headers that present ``key`` (its ``secret``) as the bearer credential."""
    return bearer(str(key["secret"]))
