"""Brute force end to end: password guessing is limited per address (the gateway) and per
account (users-service, whatever the spelling), without letting an attacker lock an
account's owner out; sign-ups per address; guesses at a current password per account and
password work per address, whatever path spells the request.

The stack's own gateway and users-service run with limits raised so that the other tests can
log in freely; a second users-service (on the stack's database) and a second gateway in
front of it, with the production-like limits below, are started here. The gateway believes
X-Forwarded-For from 127.0.0.1, so that one test can play many client addresses. What
reached the strict users-service is counted on its /metrics.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass

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
TOKEN_GUESSES_PER_MINUTE = 4  # redemptions of mailed tokens per address
RESET_REQUESTS_PER_MINUTE = 3
RATE_LIMIT_RPS, RATE_LIMIT_BURST = 20, 40
CREDENTIAL_CHANGES_PER_MINUTE = 10  # the production defaults
CURRENT_PASSWORD_FAILURES = 10


def address() -> dict[str, str]:
    """A client address never used before (buckets may outlive a run in Redis)."""
    suffix = uuid.uuid4().hex
    return {"X-Forwarded-For": f"2001:db8:{suffix[:4]}:{suffix[4:8]}::1"}  # its own /48


@dataclass
class Strict:
    gateway: httpx.AsyncClient
    users_url: str


@pytest.fixture(scope="module")
async def strict(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Strict]:
    """A users-service and a gateway before it with low limits, beside the stack's."""
    folder = tmp_path_factory.mktemp("strict")
    users_port, port, admin_port = free_port(), free_port(), free_port()
    users_env = {
        **stack.services["users"].env,
        "USERS_PORT": str(users_port),
        "LOGIN_ACCOUNT_RATE_LIMIT_PER_MINUTE": str(LOGINS_PER_MINUTE),
        "LOGIN_ACCOUNT_CEILING_PER_MINUTE": str(FAILED_LOGINS_PER_ACCOUNT),
        "CREDENTIAL_CHANGE_RATE_LIMIT_PER_MINUTE": str(CREDENTIAL_CHANGES_PER_MINUTE),
        "CURRENT_PASSWORD_FAILURE_LIMIT": str(CURRENT_PASSWORD_FAILURES),
    }
    users = Service(
        "strict-users", stack.services["users"].command, users_env, folder / "users.log", users_port
    )
    gateway_env = {
        **stack.services["gateway"].env,
        "GATEWAY_PORT": str(port),
        "GATEWAY_ADMIN_PORT": str(admin_port),
        "USERS_SERVICE_URL": users.url,
        "TRUSTED_PROXIES": "127.0.0.1",
        "LOGIN_RATE_LIMIT_PER_MINUTE": str(LOGINS_PER_MINUTE),
        "SIGNUP_RATE_LIMIT_PER_MINUTE": str(SIGNUPS_PER_MINUTE),
        "ACCOUNT_TOKEN_RATE_LIMIT_PER_MINUTE": str(TOKEN_GUESSES_PER_MINUTE),
        "RESET_REQUEST_RATE_LIMIT_PER_MINUTE": str(RESET_REQUESTS_PER_MINUTE),
        "RATE_LIMIT_RPS": str(RATE_LIMIT_RPS),
        "RATE_LIMIT_BURST": str(RATE_LIMIT_BURST),
        "ADDRESS_RATE_LIMIT_RPS": str(RATE_LIMIT_RPS * 4),
        "ADDRESS_RATE_LIMIT_BURST": str(RATE_LIMIT_BURST * 4),
    }
    command = stack.services["gateway"].command
    gateway = Service(
        "strict-gateway", command, gateway_env, folder / "gateway.log", port, admin_port=admin_port
    )
    users.start()
    gateway.start()
    try:
        await users.until_ready(timeout_s=30.0)
        await gateway.until_ready(timeout_s=30.0)
        async with httpx.AsyncClient(base_url=gateway.url, timeout=15.0) as client:
            yield Strict(client, users.url)
    finally:
        gateway.stop()
        users.stop()


@pytest.fixture
def strict_gateway(strict: Strict) -> httpx.AsyncClient:
    return strict.gateway


async def logins_seen(strict: Strict) -> Counter[str]:
    """The strict users-service's own count of POST /api/auth/token answers, by status."""
    async with httpx.AsyncClient() as client:
        metrics = (await client.get(f"{strict.users_url}/metrics")).text
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
    gateway: httpx.AsyncClient, strict_gateway: httpx.AsyncClient, strict: Strict
) -> None:
    email = await a_user(gateway)
    attacker, someone_else = address(), address()
    before = await logins_seen(strict)

    guesses = [
        await log_in(strict_gateway, f"nobody-{n}@example.com", "guess", attacker)
        for n in range(LOGINS_PER_MINUTE + 2)
    ]
    right_password_same_address = await log_in(strict_gateway, email, PASSWORD, attacker)
    right_password_elsewhere = await log_in(strict_gateway, email, PASSWORD, someone_else)
    seen = await logins_seen(strict) - before

    assert [r.status_code for r in guesses] == [401] * LOGINS_PER_MINUTE + [429, 429]
    refused = guesses[-1]
    assert_refused(refused, 429, "RATE_LIMITED")
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.headers["ratelimit-policy"].startswith('"login";')
    assert_refused(right_password_same_address, 429, "RATE_LIMITED")
    assert right_password_elsewhere.status_code == 200
    assert seen == Counter({"401": LOGINS_PER_MINUTE, "200": 1})  # the refused never arrived


async def test_guesses_at_one_account_are_limited_however_many_addresses_send_them(
    gateway: httpx.AsyncClient, strict_gateway: httpx.AsyncClient, strict: Strict
) -> None:
    email, bystander = await a_user(gateway), await a_user(gateway)
    before = await logins_seen(strict)

    guesses = [
        await log_in(strict_gateway, email, f"guess {n}", address())
        for n in range(FAILED_LOGINS_PER_ACCOUNT + 1)
    ]
    respelt = await log_in(strict_gateway, f"  {email.upper()} ", "guess", address())
    full_width = email.replace("example.com", "\uff45xample\u3002com")
    respelt_in_unicode = await log_in(strict_gateway, full_width, "guess", address())
    ignored_code_point = email.replace("example", "exa\u034fmple")  # UTS #46 drops it
    respelt_invisibly = await log_in(strict_gateway, ignored_code_point, "guess", address())
    owner = await log_in(strict_gateway, email, PASSWORD, address())
    other_account = await log_in(strict_gateway, bystander, PASSWORD, address())
    seen = await logins_seen(strict) - before

    assert [r.status_code for r in guesses] == [401] * FAILED_LOGINS_PER_ACCOUNT + [429]
    for refused in (guesses[-1], respelt, respelt_in_unicode, respelt_invisibly):
        assert_refused(refused, 429, "RATE_LIMITED")
        assert refused.headers["ratelimit-policy"].startswith('"login-account-ceiling";')
        assert int(refused.headers["retry-after"]) >= 1
    # The price of a per-account ceiling: against this many addresses, the owner waits too.
    assert_refused(owner, 429, "RATE_LIMITED")
    assert other_account.status_code == 200
    # Refused by users-service before any password was checked.
    assert seen == Counter({"401": FAILED_LOGINS_PER_ACCOUNT, "429": 5, "200": 1})


async def test_one_attacker_address_cannot_lock_the_owner_out(
    gateway: httpx.AsyncClient, strict_gateway: httpx.AsyncClient, strict: Strict
) -> None:
    email = await a_user(gateway)
    attacker, owner = address(), address()
    before = await logins_seen(strict)

    guesses = [
        await log_in(strict_gateway, email, f"guess {n}", attacker)
        for n in range(LOGINS_PER_MINUTE + 5)
    ]
    owners_logins = [await log_in(strict_gateway, email, PASSWORD, owner) for _ in range(2)]
    seen = await logins_seen(strict) - before

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


async def test_sign_ups_from_one_address_are_limited(strict_gateway: httpx.AsyncClient) -> None:
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


async def test_a_megabyte_email_at_login_is_refused_at_once_and_counts_nothing(
    strict_gateway: httpx.AsyncClient, strict: Strict
) -> None:
    domain = ".".join(["xn--" + "a" * 59] * 16_000)
    before = await logins_seen(strict)

    megabyte = await strict_gateway.post(
        "/api/auth/token",
        json={"email": f"ada@{domain}"[:1_000_000], "password": "x"},
        headers=address(),
    )
    too_long = await strict_gateway.post(
        "/api/auth/token",
        json={"email": f"ada@{domain}"[:1_000], "password": "x"},
        headers=address(),
    )
    after = await strict_gateway.get("/health")

    assert_refused(megabyte, 413, "PAYLOAD_TOO_LARGE")  # users-service's 16 KiB body limit
    error = assert_refused(too_long, 400, "VALIDATION_FAILED")
    assert set(error["fields"]) == {"email"}  # by length, before any parsing or folding
    assert after.status_code == 200
    assert await logins_seen(strict) - before == Counter({"413": 1, "400": 1})


async def test_logins_without_an_email_count_against_the_address_only(
    strict_gateway: httpx.AsyncClient,
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
    strict_gateway: httpx.AsyncClient, actors: Actors
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


async def test_credential_changes_from_one_address_are_limited_whatever_their_spelling(
    gateway: httpx.AsyncClient, strict_gateway: httpx.AsyncClient
) -> None:
    """The attack of #25 item 1: email changes with a guessed ``currentPassword`` and real
    password changes sent to ``/api/users/{id}//``, from one address, each an Argon2
    verification: they drew only from the 50/s default budget. A bystander logs in
    meanwhile."""
    victim_email = await a_user(gateway)
    login = await log_in(strict_gateway, victim_email, PASSWORD, address())
    token = {"Authorization": f"Bearer {login.json()['data']['accessToken']}"}
    me = (await strict_gateway.get("/api/users/me", headers=token)).json()["data"]["id"]
    bystander = await a_user(gateway)
    attacker = address()

    async def attempt(n: int) -> int:
        if n % 2:
            path, body = f"/api/users/{me}//", {"password": f"new password {n}",
                                                 "currentPassword": f"guess {n}"}  # fmt: skip
        else:
            path = f"/api/users/{me}"
            body = {"email": f"new-{n}-{uuid.uuid4().hex[:6]}@example.com",
                    "currentPassword": f"guess {n}"}  # fmt: skip
        response = await strict_gateway.patch(path, json=body, headers=token | attacker)
        if response.status_code == 429:
            assert_refused(response, 429, "RATE_LIMITED")
        return response.status_code

    statuses = [await attempt(n) for n in range(80)]
    bystanders_login = await log_in(strict_gateway, bystander, PASSWORD, address())

    first_refusal = statuses.index(429)
    assert first_refusal <= CREDENTIAL_CHANGES_PER_MINUTE  # before the 11th attempt
    assert set(statuses[:first_refusal]) == {401}
    assert statuses.count(401) <= CURRENT_PASSWORD_FAILURES
    assert bystanders_login.status_code == 200
    unchanged = await strict_gateway.get("/api/users/me", headers=token)
    assert unchanged.json()["data"]["email"] == victim_email


async def test_guessing_mailed_tokens_is_limited_per_address_whichever_route_guesses(
    strict_gateway: httpx.AsyncClient,
) -> None:
    guesser, someone_else = address(), address()
    routes = ("/api/email-verifications", "/api/password-resets")

    answers = [
        await strict_gateway.post(
            routes[n % 2],
            json={"token": f"guess-{n}", "password": "a long enough password"}
            if routes[n % 2] == "/api/password-resets"
            else {"token": f"guess-{n}"},
            headers=guesser,
        )
        for n in range(TOKEN_GUESSES_PER_MINUTE + 2)
    ]
    other = await strict_gateway.post(
        "/api/email-verifications", json={"token": "guess"}, headers=someone_else
    )

    statuses = [answer.status_code for answer in answers]
    assert statuses == [400] * TOKEN_GUESSES_PER_MINUTE + [429, 429]
    assert_refused(answers[-1], 429, "RATE_LIMITED")
    assert int(answers[-1].headers["Retry-After"]) > 0
    assert other.status_code == 400  # another address guesses on its own budget


async def test_reset_requests_from_one_address_are_limited(
    strict_gateway: httpx.AsyncClient,
) -> None:
    client = address()

    answers = [
        await strict_gateway.post(
            "/api/password-reset-requests",
            json={"email": f"someone-{n}@example.com"},
            headers=client,
        )
        for n in range(RESET_REQUESTS_PER_MINUTE + 1)
    ]

    assert [answer.status_code for answer in answers] == [202] * RESET_REQUESTS_PER_MINUTE + [429]
