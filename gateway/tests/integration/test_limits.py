"""Rate limits per caller (memory and Redis), the login limit, and CORS."""

from __future__ import annotations

import uuid

import redis

from api_shared.testing import TestSigner, free_port

from .conftest import StartGateway
from .stand_ins import echo_upstream

REDIS_URL = "redis://127.0.0.1:6379/15"


def _client_ip() -> dict[str, str]:
    """A fresh client address, so earlier runs' Redis buckets never interfere."""
    suffix = uuid.uuid4().hex
    return {"X-Forwarded-For": f"2001:db8::{suffix[:4]}:{suffix[4:8]}"}


async def test_over_the_burst_a_caller_gets_429_with_retry_after_and_limit_headers(
    start_gateway: StartGateway,
) -> None:
    async with (
        echo_upstream("books") as books,
        start_gateway(books_service_urls=[books], rate_limit_rps=0.5, rate_limit_burst=3) as gw,
    ):
        statuses = []
        for _ in range(4):
            response = await gw.post("/graphql", json={})
            statuses.append(response.status_code)

    assert statuses == [200, 200, 200, 429]
    assert response.json()["error"]["code"] == "RATE_LIMITED"
    assert int(response.headers["retry-after"]) >= 1
    assert response.headers["ratelimit-policy"] == '"default";q=3;w=6'
    assert response.headers["ratelimit"].startswith('"default";r=0;t=')


async def test_callers_with_tokens_are_limited_separately(
    start_gateway: StartGateway, signer: TestSigner
) -> None:
    async with (
        echo_upstream("orders") as orders,
        start_gateway(orders_service_urls=[orders], rate_limit_rps=0.1, rate_limit_burst=2) as gw,
    ):
        alice = {"Authorization": f"Bearer {signer.token('alice')}"}
        bob = {"Authorization": f"Bearer {signer.token('bob')}"}
        alice_statuses = [(await gw.get("/orders", headers=alice)).status_code for _ in range(3)]
        bob_status = (await gw.get("/orders", headers=bob)).status_code

    assert alice_statuses == [200, 200, 429]
    assert bob_status == 200


async def test_login_has_its_own_stricter_limit_per_client_address(
    start_gateway: StartGateway,
) -> None:
    async with (
        echo_upstream("users") as users,
        start_gateway(users_service_urls=[users], login_rate_limit_per_minute=2) as gw,
    ):
        logins = [(await gw.post("/api/auth/token", json={})).status_code for _ in range(3)]
        other = await gw.get("/.well-known/jwks.json")

    assert logins == [200, 200, 429]
    assert other.status_code == 200


async def test_two_gateways_on_one_redis_share_one_budget(start_gateway: StartGateway) -> None:
    caller = _client_ip()
    settings = {
        "rate_limit_rps": 0.1,
        "rate_limit_burst": 4,
        "redis_url": REDIS_URL,
        "trusted_proxies": ["127.0.0.1"],
    }
    async with (
        echo_upstream("books") as books,
        start_gateway(books_service_urls=[books], **settings) as first,
        start_gateway(books_service_urls=[books], **settings) as second,
    ):
        statuses = []
        for gateway in (first, second, first, second, first, second):
            statuses.append((await gateway.post("/graphql", json={}, headers=caller)).status_code)

    assert statuses == [200, 200, 200, 200, 429, 429]


async def test_with_redis_down_requests_are_let_through_and_counted(
    start_gateway: StartGateway,
) -> None:
    async with (
        echo_upstream("books") as books,
        start_gateway(
            books_service_urls=[books],
            rate_limit_rps=0.1,
            rate_limit_burst=1,
            redis_url=f"redis://127.0.0.1:{free_port()}/0",
        ) as gw,
    ):
        statuses = [(await gw.post("/graphql", json={})).status_code for _ in range(3)]
        metrics = (await gw.get("/metrics")).text

    assert statuses == [200, 200, 200]
    assert "gateway_rate_limiter_errors_total 1.0" in metrics


async def test_a_cors_preflight_from_an_allowed_origin_is_granted_here(
    start_gateway: StartGateway,
) -> None:
    preflight = {
        "Origin": "https://app.example.com",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "Authorization, Content-Type",
    }
    async with (
        echo_upstream("orders") as orders,
        start_gateway(orders_service_urls=[orders], cors_origins=["https://app.example.com"]) as gw,
    ):
        granted = await gw.options("/orders", headers=preflight)
        refused = await gw.options("/orders", headers=preflight | {"Origin": "https://evil.test"})
        actual = await gw.get(
            "/.well-known/jwks.json", headers={"Origin": "https://app.example.com"}
        )

    assert granted.status_code == 204
    assert granted.headers["access-control-allow-origin"] == "https://app.example.com"
    assert "POST" in granted.headers["access-control-allow-methods"]
    assert granted.headers["access-control-allow-headers"] == "authorization, content-type"
    assert refused.status_code == 204
    assert "access-control-allow-origin" not in refused.headers
    assert actual.headers["access-control-allow-origin"] == "https://app.example.com"
    assert "X-Request-ID" in actual.headers["access-control-expose-headers"]


def test_redis_is_reachable_for_these_tests() -> None:
    assert redis.Redis.from_url(REDIS_URL).ping()
