"""Brute force end to end: password guessing is limited per address and per account, without
letting an attacker lock an account's owner out; sign-ups are limited per address.

The stack's own gateway runs with limits raised so that the other tests can log in freely; a
second gateway process with the production-like limits below is started here, in front of the
same services. It believes X-Forwarded-For from 127.0.0.1, so that one test can play many
client addresses. What reached users-service is counted on its /metrics.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator

import httpx
import pytest

from api_testkit.actors import PASSWORD, Actors, sign_up
from api_testkit.contract import assert_refused
from api_testkit.graphql_clients import NORMAL_QUERY, graphiql_introspection
from api_testkit.ports import free_port
from api_testkit.processes import Service
from api_testkit.stack import Stack

# Each test starts a gateway of its own with lower limits, from the stack's environment.
pytestmark = [pytest.mark.processes, pytest.mark.usefixtures("every_service_survives")]

LOGINS_PER_MINUTE = 3
FAILED_LOGINS_PER_ACCOUNT = 6  # from every address together
SIGNUPS_PER_MINUTE = 3
RATE_LIMIT_RPS, RATE_LIMIT_BURST = 20, 40


def address() -> dict[str, str]:
    """A client address never used before (buckets may outlive a run in Redis)."""
    suffix = uuid.uuid4().hex
    return {"X-Forwarded-For": f"2001:db8:{suffix[:4]}:{suffix[4:8]}::1"}  # its own /64


@pytest.fixture(scope="module")
async def strict_gateway(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[httpx.AsyncClient]:
    """A second gateway process with low limits, in front of the stack's services."""
    port, admin_port = free_port(), free_port()
    env = stack.services["gateway"].env | {
        "GATEWAY_PORT": str(port),
        "GATEWAY_ADMIN_PORT": str(admin_port),
        "TRUSTED_PROXIES": "127.0.0.1",
        "LOGIN_RATE_LIMIT_PER_MINUTE": str(LOGINS_PER_MINUTE),
        "LOGIN_ACCOUNT_RATE_LIMIT_PER_MINUTE": str(LOGINS_PER_MINUTE),
        "LOGIN_ACCOUNT_CEILING_PER_MINUTE": str(FAILED_LOGINS_PER_ACCOUNT),
        "SIGNUP_RATE_LIMIT_PER_MINUTE": str(SIGNUPS_PER_MINUTE),
        "RATE_LIMIT_RPS": str(RATE_LIMIT_RPS),
        "RATE_LIMIT_BURST": str(RATE_LIMIT_BURST),
        "ADDRESS_RATE_LIMIT_RPS": str(RATE_LIMIT_RPS * 4),
        "ADDRESS_RATE_LIMIT_BURST": str(RATE_LIMIT_BURST * 4),
    }
    log = tmp_path_factory.mktemp("strict-gateway") / "gateway.log"
    command = stack.services["gateway"].command
    gateway = Service("strict-gateway", command, env, log, port, admin_port=admin_port)
    gateway.start()
    try:
        await gateway.until_ready(timeout_s=30.0)
        async with httpx.AsyncClient(base_url=gateway.url, timeout=15.0) as client:
            yield client
    finally:
        gateway.stop()


async def logins_seen(stack: Stack) -> Counter[str]:
    """users-service's own count of POST /api/auth/token answers, by status."""
    async with httpx.AsyncClient() as client:
        metrics = (await client.get(f"{stack.services['users'].url}/metrics")).text
    seen: Counter[str] = Counter()
    for line in metrics.splitlines():
        if line.startswith("http_requests_total{") and 'route="/api/auth/token"' in line:
            status = line.split('status="', 1)[1].split('"', 1)[0]
            seen[status] += int(float(line.rsplit(" ", 1)[1]))
    return seen


async def a_user(gateway: httpx.AsyncClient) -> str:
    email = f"target-{uuid.uuid4().hex[:10]}@example.com"
    await sign_up(gateway, email=email, password=PASSWORD)
    return email


async def log_in(
    gateway: httpx.AsyncClient, email: str, password: str, client: dict[str, str]
) -> httpx.Response:
    return await gateway.post(
        "/api/auth/token", json={"email": email, "password": password}, headers=client
    )


async def test_guesses_from_one_address_are_limited_whichever_accounts_they_name(
    gateway: httpx.AsyncClient, strict_gateway: httpx.AsyncClient, stack: Stack
) -> None:
    email = await a_user(gateway)
    attacker, someone_else = address(), address()
    before = await logins_seen(stack)

    guesses = [
        await log_in(strict_gateway, f"nobody-{n}@example.com", "guess", attacker)
        for n in range(LOGINS_PER_MINUTE + 2)
    ]
    right_password_same_address = await log_in(strict_gateway, email, PASSWORD, attacker)
    right_password_elsewhere = await log_in(strict_gateway, email, PASSWORD, someone_else)
    seen = await logins_seen(stack) - before

    assert [r.status_code for r in guesses] == [401] * LOGINS_PER_MINUTE + [429, 429]
    refused = guesses[-1]
    assert_refused(refused, 429, "RATE_LIMITED")
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.headers["ratelimit-policy"].startswith('"login";')
    assert_refused(right_password_same_address, 429, "RATE_LIMITED")
    assert right_password_elsewhere.status_code == 200
    assert seen == Counter({"401": LOGINS_PER_MINUTE, "200": 1})  # the refused never arrived


async def test_guesses_at_one_account_are_limited_however_many_addresses_send_them(
    gateway: httpx.AsyncClient, strict_gateway: httpx.AsyncClient, stack: Stack
) -> None:
    email, bystander = await a_user(gateway), await a_user(gateway)
    before = await logins_seen(stack)

    guesses = [
        await log_in(strict_gateway, email, f"guess {n}", address())
        for n in range(FAILED_LOGINS_PER_ACCOUNT + 1)
    ]
    respelt = await log_in(strict_gateway, f"  {email.upper()} ", "guess", address())
    full_width = email.replace("example.com", "\uff45xample\u3002com")
    respelt_in_unicode = await log_in(strict_gateway, full_width, "guess", address())
    owner = await log_in(strict_gateway, email, PASSWORD, address())
    other_account = await log_in(strict_gateway, bystander, PASSWORD, address())
    seen = await logins_seen(stack) - before

    assert [r.status_code for r in guesses] == [401] * FAILED_LOGINS_PER_ACCOUNT + [429]
    for refused in (guesses[-1], respelt, respelt_in_unicode):
        assert_refused(refused, 429, "RATE_LIMITED")
        assert refused.headers["ratelimit-policy"].startswith('"login-account-ceiling";')
    # The price of a per-account ceiling: against this many addresses, the owner waits too.
    assert_refused(owner, 429, "RATE_LIMITED")
    assert other_account.status_code == 200
    assert seen == Counter({"401": FAILED_LOGINS_PER_ACCOUNT, "200": 1})


async def test_one_attacker_address_cannot_lock_the_owner_out(
    gateway: httpx.AsyncClient, strict_gateway: httpx.AsyncClient, stack: Stack
) -> None:
    email = await a_user(gateway)
    attacker, owner = address(), address()
    before = await logins_seen(stack)

    guesses = [
        await log_in(strict_gateway, email, f"guess {n}", attacker)
        for n in range(LOGINS_PER_MINUTE + 5)
    ]
    owners_logins = [await log_in(strict_gateway, email, PASSWORD, owner) for _ in range(2)]
    seen = await logins_seen(stack) - before

    assert [r.status_code for r in guesses] == [401] * LOGINS_PER_MINUTE + [429] * 5
    assert [r.status_code for r in owners_logins] == [200, 200]
    assert seen == Counter({"401": LOGINS_PER_MINUTE, "200": 2})


async def test_successful_logins_do_not_count_against_the_account(
    gateway: httpx.AsyncClient, strict_gateway: httpx.AsyncClient
) -> None:
    email = await a_user(gateway)

    logins = [
        await log_in(strict_gateway, email, PASSWORD, address())
        for _ in range(FAILED_LOGINS_PER_ACCOUNT + 2)
    ]

    assert [r.status_code for r in logins] == [200] * (FAILED_LOGINS_PER_ACCOUNT + 2)


async def test_sign_ups_from_one_address_are_limited(
    strict_gateway: httpx.AsyncClient, stack: Stack
) -> None:
    client, other = address(), address()

    async def sign_up_from(headers: dict[str, str]) -> httpx.Response:
        body = {"name": "Flood", "email": f"f-{uuid.uuid4().hex}@example.com", "password": PASSWORD}
        return await strict_gateway.post("/api/users", json=body, headers=headers)

    flood = [await sign_up_from(client) for _ in range(SIGNUPS_PER_MINUTE + 2)]
    elsewhere = await sign_up_from(other)

    assert [r.status_code for r in flood] == [201] * SIGNUPS_PER_MINUTE + [429, 429]
    assert_refused(flood[-1], 429, "RATE_LIMITED")
    assert flood[-1].headers["ratelimit-policy"].startswith('"signup";')
    assert elsewhere.status_code == 201


async def test_a_megabyte_email_at_login_is_refused_before_users_service_sees_it(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    domain = ".".join(["xn--" + "a" * 59] * 16_000)
    before = await logins_seen(stack)

    refused = await gateway.post(
        "/api/auth/token", json={"email": f"ada@{domain}"[:1_000_000], "password": "x"}
    )
    after = await gateway.get("/health")

    error = assert_refused(refused, 400, "VALIDATION_FAILED")
    assert error["fields"] == {"email": "must be at most 320 characters"}
    assert after.status_code == 200
    assert await logins_seen(stack) - before == Counter()


async def test_logins_without_an_email_count_against_the_address_only(
    strict_gateway: httpx.AsyncClient, stack: Stack
) -> None:
    client = address()
    bodies = [b"not json", b"[]", b'{"password": "x"}', b'{"email": 5, "password": "x"}']

    answers = [
        await strict_gateway.post(
            "/api/auth/token", content=body, headers=client | {"content-type": "application/json"}
        )
        for body in bodies
    ]

    assert [r.status_code for r in answers] == [400] * LOGINS_PER_MINUTE + [429]
    for answer in answers[:LOGINS_PER_MINUTE]:
        assert_refused(answer, 400)
    assert answers[-1].headers["ratelimit-policy"].startswith('"login";')


async def test_an_introspection_flood_from_one_address_is_limited_while_others_are_served(
    strict_gateway: httpx.AsyncClient, stack: Stack, actors: Actors
) -> None:
    flooder, reader = address(), address()
    # The whole flood at once (up to the client's 100 connections): its arrival rate must
    # not depend on how fast books answers, or a slow machine never exceeds the refill.
    flood: Counter[int] = Counter()
    others: Counter[tuple[str, int]] = Counter()

    async def introspect(number: int) -> None:
        response = await strict_gateway.post(
            "/graphql",
            json={"query": f"{graphiql_introspection()}\n# {number}"},
            headers=flooder,
        )
        flood[response.status_code] += 1
        if response.status_code == 429:
            assert_refused(response, 429, "RATE_LIMITED")

    async def other_callers() -> None:
        for _ in range(15):
            mine = await strict_gateway.get("/orders", headers=actors.headers)
            books = await strict_gateway.post(
                "/graphql", json={"query": NORMAL_QUERY}, headers=reader
            )
            others[("customer", mine.status_code)] += 1
            others[("reader", books.status_code)] += 1

    await asyncio.gather(other_callers(), *(introspect(n) for n in range(200)))

    assert set(flood) == {200, 429}
    assert flood[200] >= RATE_LIMIT_BURST
    assert others == Counter({("customer", 200): 15, ("reader", 200): 15})
