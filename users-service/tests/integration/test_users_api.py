"""The users API over real HTTP against a real database."""

from __future__ import annotations

import uuid

import httpx


async def test_sign_up_returns_201_with_location_and_the_new_user(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post("/api/users", json={"name": "  Ada Lovelace "})

    assert response.status_code == 201
    user = response.json()["data"]
    assert user["name"] == "Ada Lovelace"
    assert user["role"] == "customer"
    assert user["email"] is None
    assert response.headers["location"] == f"/api/users/{user['id']}"
    assert user["createdAt"].endswith("Z")


async def test_created_user_can_be_read_back(client: httpx.AsyncClient) -> None:
    created = (await client.post("/api/users", json={"name": "Grace"})).json()["data"]

    response = await client.get(f"/api/users/{created['id']}")

    assert response.status_code == 200
    assert response.json() == {"data": created}


async def test_unknown_and_malformed_ids_are_not_found(client: httpx.AsyncClient) -> None:
    for user_id in (str(uuid.uuid4()), "not-a-uuid"):
        response = await client.get(f"/api/users/{user_id}")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "NOT_FOUND"


async def test_bad_json_is_malformed_json(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/api/users", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "MALFORMED_JSON"


async def test_missing_name_and_unknown_fields_name_each_field(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/users", json={"nickname": "x"})

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_FAILED"
    assert error["fields"] == {"name": "is required", "nickname": "is not allowed"}


async def test_every_response_carries_a_request_id(client: httpx.AsyncClient) -> None:
    echoed = await client.get("/health", headers={"X-Request-ID": "abc-123"})
    made = await client.get("/nowhere")

    assert echoed.headers["x-request-id"] == "abc-123"
    assert made.status_code == 404
    assert len(made.headers["x-request-id"]) == 32
