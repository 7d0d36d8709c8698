"""One client cannot take what is everyone's, end to end through the gateway: the event
stream's slots (docs/api.md#event-stream), the API keys' rate budget (docs/api.md#limits),
and a stream for a token whose session ended.

- Five accounts, each with several API keys, from one client address try to hold every
  stream of a webhooks-service replica: each account holds at most its cap (its keys'
  streams count against it), the address at most its own, and a sixth user from another
  address still opens a stream.
- One account's keys share one budget at the gateway: a sibling key finds it spent, another
  account's key does not.
- A logged-out token is refused (401) when it opens a stream.

Started here, beside the stack's: a webhooks-service replica (on the stack's database) with
low stream caps, and gateways with their own settings, one of them in front of that replica
and believing X-Forwarded-For from 127.0.0.1, so that one test can play several client
addresses.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx
import pytest

from api_testkit.actors import PASSWORD, access_token, customer, new_email, sign_up
from api_testkit.api_keys import create_key, key_headers
from api_testkit.contract import assert_refused
from api_testkit.ports import free_port
from api_testkit.processes import Service
from api_testkit.stack import Stack

pytestmark = [
    pytest.mark.processes,
    pytest.mark.usefixtures("every_service_survives"),
    pytest.mark.needs(webhooks_service="1.3.0", gateway="2.0.0"),
]

STREAMS_PER_ACCOUNT = 2  # EVENTS_STREAM_MAX_PER_CALLER
STREAMS_PER_ADDRESS = 8  # EVENTS_STREAM_MAX_PER_ADDRESS
STREAMS_PER_REPLICA = 10  # EVENTS_STREAM_MAX: what five accounts' 2 streams each would fill
ACCOUNTS, KEYS_PER_ACCOUNT = 5, 3
KEY_BURST = 3  # API_KEY_RATE_LIMIT_BURST, refilled far slower than a test runs
READ_TIMEOUT_S = 15.0


def address() -> dict[str, str]:
    """A client address never used before (buckets may outlive a run in Redis)."""
    suffix = uuid.uuid4().hex
    return {"X-Forwarded-For": f"2001:db8:{suffix[:4]}:{suffix[4:8]}::1"}


@asynccontextmanager
async def started(service: Service) -> AsyncIterator[Service]:
    service.start()
    try:
        await service.until_ready(timeout_s=30.0)
        yield service
    finally:
        service.stop()


def a_gateway(stack: Stack, folder: Path, env: Mapping[str, str]) -> Service:
    """A gateway like the stack's, on ports of its own, with ``env`` on top."""
    port, admin_port = free_port(), free_port()
    gateway_env = {
        **stack.services["gateway"].env,
        "GATEWAY_PORT": str(port),
        "GATEWAY_ADMIN_PORT": str(admin_port),
        **env,
    }
    command = stack.services["gateway"].command
    log = folder / f"gateway-{port}.log"
    return Service("hoard-gateway", command, gateway_env, log, port, admin_port=admin_port)


@pytest.fixture(scope="module")
async def streams_gateway(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[httpx.AsyncClient]:
    """A gateway in front of a webhooks-service replica with low stream caps."""
    folder = tmp_path_factory.mktemp("hoard")
    webhooks_port = free_port()
    webhooks_env = {
        **stack.services["webhooks"].env,
        "WEBHOOKS_PORT": str(webhooks_port),
        "EVENTS_STREAM_MAX_PER_CALLER": str(STREAMS_PER_ACCOUNT),
        "EVENTS_STREAM_MAX_PER_ADDRESS": str(STREAMS_PER_ADDRESS),
        "EVENTS_STREAM_MAX": str(STREAMS_PER_REPLICA),
    }
    webhooks = Service(
        "hoard-webhooks",
        stack.services["webhooks"].command,
        webhooks_env,
        folder / "webhooks.log",
        webhooks_port,
    )
    gateway_env = {"WEBHOOKS_SERVICE_URL": webhooks.url, "TRUSTED_PROXIES": "127.0.0.1"}
    async with (
        started(webhooks),
        started(a_gateway(stack, folder, gateway_env)) as gateway,
        httpx.AsyncClient(base_url=gateway.url, timeout=READ_TIMEOUT_S) as client,
    ):
        yield client


@pytest.fixture(scope="module")
async def keys_gateway(
    stack: Stack, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[httpx.AsyncClient]:
    """A gateway with a small budget for API keys, every other limit lifted."""
    env = {"API_KEY_RATE_LIMIT_RPS": "0.001", "API_KEY_RATE_LIMIT_BURST": str(KEY_BURST)}
    async with (
        started(a_gateway(stack, tmp_path_factory.mktemp("keys"), env)) as gateway,
        httpx.AsyncClient(base_url=gateway.url, timeout=15.0) as client,
    ):
        yield client


async def test_five_accounts_with_all_their_keys_cannot_take_every_stream(
    gateway: httpx.AsyncClient, streams_gateway: httpx.AsyncClient
) -> None:
    attacker, elsewhere = address(), address()
    accounts: list[list[dict[str, str]]] = []  # each account's credentials: token, then keys
    for _ in range(ACCOUNTS):
        _, headers = await customer(gateway)
        keys = [await create_key(gateway, headers, "events:read") for _ in range(KEYS_PER_ACCOUNT)]
        accounts.append([headers, *(key_headers(key) for key in keys)])
    _, bystander = await customer(gateway)

    async with AsyncExitStack() as held:
        answers = [
            [
                await held.enter_async_context(
                    streams_gateway.stream(
                        "GET", "/api/events/stream", headers={**credential, **attacker}
                    )
                )
                for credential in credentials
            ]
            for credentials in accounts
        ]
        for refused in (answer for account in answers for answer in account):
            if refused.status_code != 200:
                await refused.aread()
        async with streams_gateway.stream(
            "GET", "/api/events/stream", headers={**bystander, **elsewhere}
        ) as sixth:
            sixth_status = sixth.status_code

    opened = [sum(answer.status_code == 200 for answer in account) for account in answers]
    # Each account holds its cap, token and keys together, until the address holds its own.
    assert opened == [STREAMS_PER_ACCOUNT] * 4 + [0], opened
    assert sum(opened) == STREAMS_PER_ADDRESS
    for account in answers[:4]:
        for refused in account[STREAMS_PER_ACCOUNT:]:
            assert_refused(refused, 429, "RATE_LIMITED")
            assert "per account, its API keys' included" in refused.json()["error"]["message"]
            assert int(refused.headers["retry-after"]) >= 1
    for refused in answers[4]:
        assert_refused(refused, 429, "RATE_LIMITED")
        assert "per client address" in refused.json()["error"]["message"]
    # The replica is not full of the attacker: someone from elsewhere still gets a stream.
    assert sixth_status == 200


async def test_an_accounts_keys_share_one_budget_and_another_accounts_key_has_its_own(
    gateway: httpx.AsyncClient, keys_gateway: httpx.AsyncClient
) -> None:
    _, owner = await customer(gateway)
    first, sibling = [await create_key(gateway, owner, "orders:read") for _ in range(2)]
    _, stranger = await customer(gateway)
    strangers = await create_key(gateway, stranger, "orders:read")

    spent = [
        await keys_gateway.get("/orders", headers=key_headers(first)) for _ in range(KEY_BURST + 1)
    ]
    siblings = await keys_gateway.get("/orders", headers=key_headers(sibling))
    other_account = await keys_gateway.get("/orders", headers=key_headers(strangers))
    owners_token = await keys_gateway.get("/orders", headers=owner)

    assert [r.status_code for r in spent] == [200] * KEY_BURST + [429]
    assert_refused(siblings, 429, "RATE_LIMITED")
    assert siblings.headers["ratelimit-policy"].startswith('"api-key";')
    assert other_account.status_code == 200, other_account.text
    # The owner's own login keeps its budget (docs/api.md#limits): a script's flood leaves it.
    assert owners_token.status_code == 200, owners_token.text


async def test_a_logged_out_token_cannot_open_a_stream(gateway: httpx.AsyncClient) -> None:
    email = new_email()
    await sign_up(gateway, email=email, password=PASSWORD)
    ended_token = await access_token(gateway, email)
    other_session = await access_token(gateway, email)
    logged_out = await gateway.delete(
        "/api/auth/sessions/current", headers={"Authorization": f"Bearer {ended_token}"}
    )
    assert logged_out.status_code == 204, logged_out.text

    refused = await gateway.get(
        "/api/events/stream", headers={"Authorization": f"Bearer {ended_token}"}
    )
    async with gateway.stream(
        "GET", "/api/events/stream", headers={"Authorization": f"Bearer {other_session}"}
    ) as still_open:
        other_status = still_open.status_code

    assert_refused(refused, 401, "UNAUTHENTICATED")
    assert other_status == 200  # the same account's other session goes on
