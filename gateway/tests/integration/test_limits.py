"""Rate limits per caller and address (memory and Redis), the per-address budgets the route
table names (logins, refreshes, sign-ups), and CORS. The budgets that need an account or a
session are users-service's (users-service/tests/integration/test_credential_limits.py)."""

from __future__ import annotations

import contextlib
import subprocess
import time
import uuid
from collections.abc import Iterator

import redis
from aiohttp import web

from api_testkit.ports import free_port
from api_testkit.tokens import TestSigner

from .conftest import StartGateway
from .stand_ins import echo_upstream, stand_in

REDIS_URL = "redis://127.0.0.1:6379/15"


def _client_ip() -> dict[str, str]:
    """A fresh client address (its own /64), so earlier runs' Redis buckets never interfere."""
    suffix = uuid.uuid4().hex
    return {"X-Forwarded-For": f"2001:db8:{suffix[:4]}:{suffix[4:8]}::1"}


async def test_over_the_burst_a_caller_gets_429_with_retry_after_and_limit_headers(
    start_echo_gateway: StartGateway,
) -> None:
    async with start_echo_gateway("books", rate_limit_rps=0.5, rate_limit_burst=3) as gw:
        statuses = []
        for _ in range(4):
            response = await gw.post("/graphql", json={})
            statuses.append(response.status_code)
        metrics = (await gw.admin_get("/metrics")).text

    assert statuses == [200, 200, 200, 429]
    assert 'gateway_rate_limited_total{policy="default"} 1.0' in metrics
    assert response.json()["error"]["code"] == "RATE_LIMITED"
    assert int(response.headers["retry-after"]) >= 1
    assert response.headers["ratelimit-policy"] == '"default";q=3;w=6'
    assert response.headers["ratelimit"].startswith('"default";r=0;t=')


async def test_callers_with_tokens_are_limited_separately(
    start_echo_gateway: StartGateway, signer: TestSigner
) -> None:
    async with start_echo_gateway("orders", rate_limit_rps=0.1, rate_limit_burst=2) as gw:
        alice = {"Authorization": f"Bearer {signer.token('alice')}"}
        bob = {"Authorization": f"Bearer {signer.token('bob')}"}
        alice_statuses = [(await gw.get("/orders", headers=alice)).status_code for _ in range(3)]
        bob_status = (await gw.get("/orders", headers=bob)).status_code

    assert alice_statuses == [200, 200, 429]
    assert bob_status == 200


async def test_login_has_its_own_stricter_limit_per_client_address(
    start_echo_gateway: StartGateway,
) -> None:
    async with start_echo_gateway("users", login_rate_limit_per_minute=2) as gw:
        logins = [(await gw.post("/api/auth/token", json={})).status_code for _ in range(3)]
        other = await gw.get("/.well-known/jwks.json")

    assert logins == [200, 200, 429]
    assert other.status_code == 200


def _refresh_token(session: uuid.UUID | None = None) -> dict[str, str]:
    """A body of the layout users-service issues (the stand-in upstream checks nothing)."""
    secret = uuid.uuid4().hex + uuid.uuid4().hex[:11]  # 43 base64url characters
    return {"refreshToken": f"{(session or uuid.uuid4()).hex}.{secret}"}


async def test_refresh_has_its_own_limit_per_client_address(
    start_echo_gateway: StartGateway,
) -> None:
    async with start_echo_gateway("users", refresh_rate_limit_per_minute=2) as gw:
        refreshes = [
            (await gw.post("/api/auth/refresh", json=_refresh_token())).status_code
            for _ in range(3)
        ]
        login = await gw.post("/api/auth/token", json={})

    assert refreshes == [200, 200, 429]
    assert login.status_code == 200  # the login budget is another one


async def test_a_refresh_grant_at_the_token_resource_draws_from_the_login_budget(
    start_echo_gateway: StartGateway,
) -> None:
    # The gateway reads no bodies: a refresh grant is a token request like a login, so it
    # may never widen the budget of password guesses (docs/api.md#limits).
    grant = {"grantType": "refresh_token", **_refresh_token()}
    async with start_echo_gateway(
        "users", login_rate_limit_per_minute=2, refresh_rate_limit_per_minute=100
    ) as gw:
        grants = [(await gw.post("/api/auth/token", json=grant)).status_code for _ in range(2)]
        login = await gw.post("/api/auth/token", json={})
        alias = await gw.post("/api/auth/refresh", json=_refresh_token())

    assert grants == [200, 200]
    assert login.status_code == 429
    assert login.headers["ratelimit-policy"].startswith('"login"')
    assert alias.status_code == 200  # the deprecated path keeps the refresh budget


def _addresses(count: int) -> list[dict[str, str]]:
    return [_client_ip() for _ in range(count)]


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


async def test_with_redis_unreachable_the_limits_hold_in_memory_and_failures_are_counted(
    start_echo_gateway: StartGateway,
) -> None:
    async with start_echo_gateway(
        "books",
        "users",
        rate_limit_rps=0.1,
        rate_limit_burst=1,
        login_rate_limit_per_minute=1,
        redis_url=f"redis://127.0.0.1:{free_port()}/0",  # nothing listens there
    ) as gw:
        statuses = [(await gw.post("/graphql", json={})).status_code for _ in range(3)]
        logins = [(await gw.post("/api/auth/token", json={})).status_code for _ in range(2)]
        metrics = (await gw.admin_get("/metrics")).text

    assert statuses == [200, 429, 429]
    assert logins == [200, 429]  # login limits never fail open
    assert "gateway_rate_limiter_errors_total 1.0" in metrics


async def test_a_cors_preflight_from_an_allowed_origin_is_granted_here(
    start_echo_gateway: StartGateway,
) -> None:
    preflight = {
        "Origin": "https://app.example.com",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "Authorization, Content-Type",
    }
    async with start_echo_gateway("orders", cors_origins=["https://app.example.com"]) as gw:
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


@contextlib.contextmanager
def _own_redis() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A redis-server of this test's own on a free port (the machine's one stays up)."""
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = redis.Redis(port=port)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0", server
    finally:
        server.kill()
        server.wait()


async def test_when_redis_stops_mid_run_the_limits_carry_on_in_memory(
    start_echo_gateway: StartGateway,
) -> None:
    with _own_redis() as (url, server):
        async with start_echo_gateway(
            "books", rate_limit_rps=0.01, rate_limit_burst=2, redis_url=url
        ) as gw:
            with_redis = [(await gw.post("/graphql", json={})).status_code for _ in range(3)]
            server.kill()
            server.wait()
            without = [(await gw.post("/graphql", json={})).status_code for _ in range(3)]
            metrics = (await gw.admin_get("/metrics")).text

    assert with_redis == [200, 200, 429]
    # This process's own bucket starts full: the limit loosens by one burst, never lifts.
    assert without == [200, 200, 429]
    assert "gateway_rate_limiter_errors_total 1.0" in metrics


async def test_sign_ups_by_any_spelling_of_their_path_draw_from_one_budget_per_address(
    start_echo_gateway: StartGateway,
) -> None:
    # users-service's router strips every trailing slash: each of these is a sign-up there.
    async with start_echo_gateway("users", signup_rate_limit_per_minute=3) as gw:
        statuses = [
            (await gw.post(path, json={})).status_code
            for path in ("/api/users", "/api/users/", "/api/users//", "/api/users///")
        ]

    assert statuses == [200, 200, 200, 429]


async def test_the_login_budget_counts_an_ipv6_site_by_its_48(
    start_echo_gateway: StartGateway,
) -> None:
    site = uuid.uuid4().hex[:4]
    async with start_echo_gateway(
        "users", trusted_proxies=["127.0.0.1"], login_rate_limit_per_minute=2
    ) as gw:
        statuses = [
            (
                await gw.post(
                    "/api/auth/token",
                    json={},
                    headers={"X-Forwarded-For": f"2001:db8:{site}:{subnet:x}::1"},
                )
            ).status_code
            for subnet in range(3)  # three /64s of one /48
        ]

    assert statuses == [200, 200, 429]


async def test_a_limit_users_service_answers_keeps_its_own_policy_headers(
    start_gateway: StartGateway,
) -> None:
    async def refused(request: web.Request) -> web.Response:
        return web.json_response(
            {"error": {"code": "RATE_LIMITED", "message": "Too many."}},
            status=429,
            headers={
                "Retry-After": "60",
                "RateLimit-Policy": '"login-account";q=10;w=60',
                "RateLimit": '"login-account";r=0;t=60',
            },
        )

    async with (
        stand_in({"/api/auth/token": refused}) as users,
        start_gateway(users_service_urls=[users]) as gw,
    ):
        response = await gw.post("/api/auth/token", json={})

    assert response.status_code == 429
    assert response.headers["retry-after"] == "60"
    assert response.headers["ratelimit-policy"] == '"login-account";q=10;w=60'
    assert response.headers["ratelimit"] == '"login-account";r=0;t=60'


async def test_the_gateways_own_documents_draw_from_the_address_budget(
    start_echo_gateway: StartGateway,
) -> None:
    async with start_echo_gateway(
        "books", address_rate_limit_rps=0.01, address_rate_limit_burst=2
    ) as gw:
        statuses = [(await gw.get(path)).status_code for path in ("/docs", "/docs", "/docs")]
        document = await gw.get("/openapi.json")

    assert statuses == [200, 200, 429]
    assert document.status_code == 429
    assert document.headers["ratelimit-policy"].startswith('"address";')
