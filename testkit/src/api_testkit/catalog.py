"""The book catalog as a client reads it, through GraphQL."""

from __future__ import annotations

import httpx


async def book_ids(client: httpx.AsyncClient) -> list[str]:
    """Every book's id, in the catalog's order."""
    response = await client.post("/graphql", json={"query": "{ books { id } }"})
    assert response.status_code == 200, response.text
    return [book["id"] for book in response.json()["data"]["books"]]
