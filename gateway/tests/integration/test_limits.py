"""Rate limits per caller (memory and Redis), the login limit, and CORS."""

from __future__ import annotations

import contextlib
import hashlib
import subprocess
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
import redis

from api_testkit.ports import free_port
from api_testkit.tokens import TestSigner

from .conftest import StartGateway
from .stand_ins import RIGHT_PASSWORD, echo_upstream

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
    async with start_echo_gateway(
        "users", refresh_rate_limit_per_minute=2, refresh_session_rate_limit_per_minute=100
    ) as gw:
        refreshes = [
            (await gw.post("/api/auth/refresh", json=_refresh_token())).status_code
            for _ in range(3)
        ]
        login = await gw.post("/api/auth/token", json={})

    assert refreshes == [200, 200, 429]
    assert login.status_code == 200  # the login budget is another one


async def test_refreshes_of_one_session_are_limited_however_many_addresses_send_them(
    start_echo_gateway: StartGateway,
) -> None:
    session = uuid.uuid4()
    async with start_echo_gateway(
        "users",
        trusted_proxies=["127.0.0.1"],
        refresh_rate_limit_per_minute=100,
        refresh_session_rate_limit_per_minute=2,
    ) as gw:
        statuses = [
            (
                await gw.post("/api/auth/refresh", json=_refresh_token(session), headers=address)
            ).status_code
            for address in _addresses(3)
        ]
        other_session = await gw.post("/api/auth/refresh", json=_refresh_token())
        malformed = [
            (await gw.post("/api/auth/refresh", json=body, headers=address)).status_code
            for body, address in zip(
                ({"refreshToken": "garbage"}, {"refreshToken": 5}, {}), _addresses(3), strict=True
            )
        ]

    assert statuses == [200, 200, 429]
    assert other_session.status_code == 200
    assert malformed == [200, 200, 200]  # no session named: the address limit alone applies


def _addresses(count: int) -> list[dict[str, str]]:
    return [_client_ip() for _ in range(count)]


WRONG_PASSWORD = "a guess"


def _login(email: object, password: str = WRONG_PASSWORD) -> dict[str, object]:
    return {"email": email, "password": password}


async def _logins_from_fresh_addresses(
    gateway: httpx.AsyncClient, email: str, count: int
) -> list[int]:
    statuses = []
    for address in _addresses(count):
        response = await gateway.post("/api/auth/token", json=_login(email), headers=address)
        statuses.append(response.status_code)
    return statuses


async def test_failed_logins_to_one_account_are_limited_however_many_addresses_send_them(
    start_login_gateway: StartGateway,
) -> None:
    async with start_login_gateway(login_account_ceiling_per_minute=2) as gw:
        statuses = await _logins_from_fresh_addresses(gw, "ada@example.com", 3)
        refused = await gw.post("/api/auth/token", json=_login("ada@example.com"))
        other_account = await gw.post("/api/auth/token", json=_login("bob@example.com"))

    assert statuses == [401, 401, 429]
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "RATE_LIMITED"
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.headers["ratelimit-policy"] == '"login-account-ceiling";q=2;w=60'
    assert other_account.status_code == 401


async def test_an_attacker_address_cannot_lock_the_owner_out_of_an_account(
    start_echo_gateway: StartGateway,
) -> None:
    """The attack of #12 item 4 with the default limits: 10 bad logins, then more."""
    attacker, owner = _client_ip(), _client_ip()
    async with start_echo_gateway("users", trusted_proxies=["127.0.0.1"]) as gw:
        guesses = [
            await gw.post("/api/auth/token", json=_login("admin@example.com"), headers=attacker)
            for _ in range(15)
        ]
        owners_login = await gw.post(
            "/api/auth/token",
            json=_login("admin@example.com", RIGHT_PASSWORD),
            headers=owner,
        )

    assert [g.status_code for g in guesses] == [401] * 10 + [429] * 5
    assert owners_login.status_code == 200


async def test_successful_logins_never_use_up_the_accounts_budget(
    start_login_gateway: StartGateway,
) -> None:
    async with start_login_gateway(
        login_account_rate_limit_per_minute=2, login_account_ceiling_per_minute=2
    ) as gw:
        owner = _client_ip()
        successes = [
            await gw.post("/api/auth/token", json=_login("ada@example.com", RIGHT_PASSWORD))
            for _ in range(5)
        ]
        failures = [
            await gw.post("/api/auth/token", json=_login("ada@example.com"), headers=owner)
            for _ in range(3)
        ]

    assert [r.status_code for r in successes] == [200] * 5
    assert [r.status_code for r in failures] == [401, 401, 429]
    assert failures[-1].headers["ratelimit-policy"].startswith('"login-account";')


@pytest.mark.parametrize(
    "spellings",
    [
        [
            "ada@example.com",
            "  ADA@Example.COM ",
            "ada@\uff25xample.com",  # full-width E
            "ada@example\u3002com",  # ideographic full stop
            "Ada@EXAMPLE\uff0ecom",  # full-width full stop
        ],
        [
            "ada@ex\u00e4mple.com",
            "ADA@EX\u00c4MPLE.COM",
            "ada@exa\u0308mple.com",  # decomposed: a + combining diaeresis
            "ada@xn--exmple-cua.com",  # punycode
            "ada@XN--EXMPLE-CUA.com",
        ],
    ],
    ids=["ascii-domain", "international-domain"],
)
async def test_every_spelling_of_one_address_draws_from_one_account_bucket(
    start_login_gateway: StartGateway, spellings: list[str]
) -> None:
    # users-service reads each group as one address (email-validator: NFC, lower, UTS #46).
    async with start_login_gateway(login_account_ceiling_per_minute=len(spellings) - 1) as gw:
        statuses = []
        for spelling, address in zip(spellings, _addresses(len(spellings)), strict=True):
            response = await gw.post("/api/auth/token", json=_login(spelling), headers=address)
            statuses.append(response.status_code)

    assert statuses == [401] * (len(spellings) - 1) + [429]


async def test_a_login_naming_no_account_is_limited_per_address_only(
    start_echo_gateway: StartGateway,
) -> None:
    bodies: list[dict[str, object]] = [
        {"content": b"not json", "headers": {"content-type": "application/json"}},
        {"json": ["ada@example.com"]},
        {"json": {"password": "no email"}},
        {"json": _login(None)},
        {"json": _login(["ada@example.com"])},
    ]
    async with start_echo_gateway(
        "users", login_rate_limit_per_minute=len(bodies), login_account_rate_limit_per_minute=1
    ) as gw:
        statuses = [(await gw.post("/api/auth/token", **body)).status_code for body in bodies]
        over_the_address_limit = await gw.post("/api/auth/token", json={})

    assert statuses == [200] * len(bodies)  # the echo stands in for users-service's 400s
    assert over_the_address_limit.status_code == 429
    assert over_the_address_limit.headers["ratelimit-policy"].startswith('"login";')


async def test_the_account_ceiling_defaults_to_ten_times_the_account_address_limit(
    start_login_gateway: StartGateway,
) -> None:
    async with start_login_gateway(login_account_rate_limit_per_minute=1) as gw:
        statuses = await _logins_from_fresh_addresses(gw, "ada@example.com", 11)

    assert statuses == [401] * 10 + [429]


async def test_account_buckets_in_redis_are_keyed_by_a_hash_never_by_the_address(
    start_login_gateway: StartGateway,
) -> None:
    email = f"ada-{uuid.uuid4().hex}@example.com"
    digest = hashlib.sha256(email.encode()).hexdigest()
    store = redis.Redis.from_url(REDIS_URL)
    async with start_login_gateway(redis_url=REDIS_URL, login_account_ceiling_per_minute=1) as gw:
        first = await gw.post("/api/auth/token", json=_login(email.upper()), headers=_client_ip())
        second = await gw.post("/api/auth/token", json=_login(email), headers=_client_ip())
    keys = [key.decode() for key in store.scan_iter(match="ratelimit:login:account:*")]

    assert (first.status_code, second.status_code) == (401, 429)
    assert f"ratelimit:login:account:{digest}" in keys
    assert not any(email.split("@")[0] in key for key in keys)


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


async def test_with_redis_a_successful_login_gives_its_account_token_back(
    start_login_gateway: StartGateway,
) -> None:
    email = f"ada-{uuid.uuid4().hex}@example.com"
    async with start_login_gateway(redis_url=REDIS_URL, login_account_ceiling_per_minute=1) as gw:
        successes = [
            await gw.post(
                "/api/auth/token", json=_login(email, RIGHT_PASSWORD), headers=_client_ip()
            )
            for _ in range(3)
        ]
        failures = [
            await gw.post("/api/auth/token", json=_login(email), headers=_client_ip())
            for _ in range(2)
        ]

    assert [r.status_code for r in successes] == [200, 200, 200]
    assert [r.status_code for r in failures] == [401, 429]
