"""The path every request takes: gateway → service → database, and the contract's errors."""

from __future__ import annotations

import os
import tomllib
import uuid
from pathlib import Path

import httpx
import pytest

from api_testkit.stack import Stack

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.smoke
async def test_sign_up_through_the_gateway_returns_201_with_location(
    gateway: httpx.AsyncClient,
) -> None:
    response = await gateway.post("/api/users", json={"name": "Ada"})

    assert response.status_code == 201
    user = response.json()["data"]
    assert user["name"] == "Ada"
    uuid.UUID(user["id"])
    assert response.headers["location"] == f"/api/users/{user['id']}"
    assert response.headers["x-request-id"]


async def test_bad_json_through_the_gateway_is_malformed_json(gateway: httpx.AsyncClient) -> None:
    response = await gateway.post(
        "/api/users", content=b'{"name": ', headers={"content-type": "application/json"}
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "MALFORMED_JSON"


async def test_unknown_route_is_404_in_the_contract_shape(gateway: httpx.AsyncClient) -> None:
    response = await gateway.get("/no/such/route")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"
    assert response.headers["x-request-id"]


async def test_a_well_formed_request_id_is_echoed_end_to_end(gateway: httpx.AsyncClient) -> None:
    response = await gateway.get("/no/such/route", headers={"X-Request-ID": "trace-42"})

    assert response.headers["x-request-id"] == "trace-42"


@pytest.mark.smoke
async def test_protected_routes_need_a_token_at_the_gateway(gateway: httpx.AsyncClient) -> None:
    for path in (
        "/api/users",
        f"/api/users/{uuid.uuid4()}",
        "/orders",
        "/users/x/orders",
        "/api/webhooks",
    ):
        response = await gateway.get(path)
        assert response.status_code == 401, path
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.json()["error"]["code"] == "UNAUTHENTICATED"


@pytest.mark.processes  # the gateway's admin port is private (not published by compose)
async def test_every_service_is_healthy_and_ready(stack: Stack, gateway: httpx.AsyncClient) -> None:
    admin = stack.services["gateway"].admin_url
    ready = await gateway.get(f"{admin}/ready")
    status = await gateway.get(f"{admin}/status")

    assert ready.status_code == 200
    assert ready.json()["checks"] == {}  # the gateway's readiness is its own (docs/operations.md)
    assert status.json()["status"] == "ok"
    assert {name: u["status"] for name, u in status.json()["upstreams"].items()} == {
        "users": "ok",
        "orders": "ok",
        "books": "ok",
        "webhooks": "ok",
    }
    assert (await gateway.get("/health")).json() == {"status": "ok"}
    assert (await gateway.get(f"{admin}/health")).json() == {"status": "ok"}


@pytest.mark.processes  # reads the private admin port too
async def test_readiness_and_metrics_are_not_public(
    stack: Stack, gateway: httpx.AsyncClient
) -> None:
    public = [await gateway.get(path) for path in ("/ready", "/metrics")]
    metrics = await gateway.get(f"{stack.services['gateway'].admin_url}/metrics")

    for response in public:
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "NOT_FOUND"
    assert "gateway_rate_limited_total" in metrics.text


# Each process of the Procfile → the workspace member whose version it has (docs/releasing.md).
MEMBERS = {
    "users": "users-service",
    "orders": "orders-service",
    "books": "books-graphql",
    "webhooks": "webhooks-service",
    "dispatcher": "webhooks-service",
    "gateway": "gateway",
}


def _running_version(member: str) -> str:
    """The release of ``member`` the stack runs: E2E_VERSION_<MEMBER> when a mixed-release run
    sets it (an older image beside this checkout's), else this checkout's own."""
    running = os.environ.get(f"E2E_VERSION_{member.upper().replace('-', '_')}")
    return running or _pyproject_version(member)


def _pyproject_version(member: str) -> str:
    text = (ROOT / member / "pyproject.toml").read_text(encoding="utf-8")
    version: str = tomllib.loads(text)["project"]["version"]
    return version


@pytest.mark.processes  # reads each service's own port, which compose does not publish
async def test_every_process_tells_its_service_and_the_version_of_its_pyproject(
    stack: Stack, gateway: httpx.AsyncClient
) -> None:
    answers = {
        name: (await gateway.get(f"{stack.services[name].url}/version")).json() for name in MEMBERS
    }
    through_gateway = await gateway.get("/version")
    on_admin_port = await gateway.get(f"{stack.services['gateway'].admin_url}/version")

    for name, member in MEMBERS.items():
        assert answers[name] == {"service": member, "version": _pyproject_version(member)}
    assert through_gateway.json() == answers["gateway"]  # the gateway's own, not proxied
    assert on_admin_port.json() == answers["gateway"]
    document = (await gateway.get("/openapi.json")).json()
    assert document["info"]["version"] == _pyproject_version("gateway")


@pytest.mark.smoke
@pytest.mark.needs(gateway="1.0.0")  # GET /version came with 1.0.0: an older gateway has none
async def test_the_gateway_tells_its_version_on_its_public_port(gateway: httpx.AsyncClient) -> None:
    answer = await gateway.get("/version")

    assert answer.status_code == 200
    assert answer.json() == {"service": "gateway", "version": _running_version("gateway")}
