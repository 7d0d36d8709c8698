"""users-service keeps every contract its consumers committed: their HTTP requests
(``contracts/pacts/*-users-service.json``) replayed on a real users-service process with its
own database, and the events they take (``*-users-service-events.json``) compared with those
its real outbox writes.

Each provider state is made through the service's public API, as a client would: the admin
ensured at start-up logs in, a customer signs up. What only the service can choose (a user's
id, a token) reaches the replayed request through the state's values (``from_state``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tortoise.context import TortoiseContext

from api_shared.auth import Role
from api_testkit.actors import PASSWORD, access_token, customer_caller, log_in, new_email, sign_up
from api_testkit.api_keys import create_key
from api_testkit.neighbours import UsersService, running_users_service
from api_testkit.pacts import USERS_SERVICE, USERS_SERVICE_EVENTS, recorded_event, verify_pacts
from users_service.database import database_config
from users_service.settings import Settings
from users_service.users.events import CLAIMED, CREATED, DELETED, UPDATED
from users_service.users.repository import UserRepository

# The tests lift every rate limit; the account's budget of failed logins is put back, small.
ACCOUNT_BUDGET = {
    "LOGIN_ACCOUNT_RATE_LIMIT_PER_MINUTE": "3",
    "LOGIN_ACCOUNT_CEILING_PER_MINUTE": "3",
}
MAX_FAILED_LOGINS = 10  # the loop stops at the first 429


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[UsersService]:
    async with running_users_service(
        tmp_path_factory.mktemp("users"), environment=ACCOUNT_BUDGET
    ) as service:
        yield service


class States:
    """The provider states the consumers name, each set up on the running service."""

    def __init__(self, provider: UsersService, client: httpx.AsyncClient) -> None:
        self.provider, self.client = provider, client

    async def admin(self, params: dict[str, Any]) -> dict[str, str]:
        token = await access_token(
            self.client, self.provider.admin_email, self.provider.admin_password
        )
        return {"token": token}

    async def admin_and_customer(self, params: dict[str, Any]) -> dict[str, str]:
        customer = await customer_caller(self.client)
        return {**await self.admin(params), "userId": customer.id}

    async def customer_can_log_in(self, params: dict[str, Any]) -> dict[str, str]:
        await sign_up(self.client, email=params["email"], password=params["password"])
        return {}

    async def customer_logged_in(self, params: dict[str, Any]) -> dict[str, str]:
        email = new_email("refresh")
        await sign_up(self.client, email=email, password=PASSWORD)
        return {"refreshToken": (await log_in(self.client, email))["refreshToken"]}

    async def customer_holds_orders_read_key(self, params: dict[str, Any]) -> dict[str, str]:
        """A customer who made a key with ``orders:read``; the key is the state's value."""
        customer = await customer_caller(self.client)
        key = await create_key(self.client, customer.headers, "orders:read")
        return {"apiKey": key["secret"]}

    async def failed_logins_used_up(self, params: dict[str, Any]) -> dict[str, str]:
        """The account's budget of failed logins spent, as a password guesser spends it."""
        await sign_up(self.client, email=params["email"], password=PASSWORD)
        wrong = {"email": params["email"], "password": params["password"]}
        for _ in range(MAX_FAILED_LOGINS):
            answer = await self.client.post("/api/auth/token", json=wrong)
            if answer.status_code == 429:
                return {}
            assert answer.status_code == 401, answer.text
        raise AssertionError(f"still no 429 after {MAX_FAILED_LOGINS} failed logins")


async def test_users_service_keeps_its_consumers_http_contracts(
    provider: UsersService, tmp_path: Path
) -> None:
    async with httpx.AsyncClient(base_url=provider.url, timeout=15.0) as client:
        states = States(provider, client)
        await verify_pacts(
            USERS_SERVICE,
            url=provider.url,
            states={
                "an admin is logged in": states.admin,
                "an admin is logged in and a customer exists": states.admin_and_customer,
                "a customer can log in": states.customer_can_log_in,
                "a customer has logged in": states.customer_logged_in,
                "a customer holds an API key with orders:read": (
                    states.customer_holds_orders_read_key
                ),
                "a customer's failed logins used up the account's budget": (
                    states.failed_logins_used_up
                ),
            },
        )


@pytest.fixture
async def outbox(settings: Settings) -> AsyncIterator[UserRepository]:
    """The service's own repository, recording its events in the outbox of a real database."""
    async with TortoiseContext() as context:
        await context.init(config=database_config(settings))
        yield UserRepository()


async def test_users_service_events_keep_their_consumers_contracts(
    outbox: UserRepository,
) -> None:
    """Each event the consumers expect, made by the change that makes it and read back from the
    outbox as the relay would publish it."""
    customer = await outbox.add(
        name="Customer", email=new_email("created"), password_hash=None, role=Role.CUSTOMER
    )
    demoted = await outbox.add(
        name="Demoted", email=new_email("demoted"), password_hash=None, role=Role.ADMIN
    )
    assert await outbox.update(demoted, {"role": Role.CUSTOMER})
    suspended = await outbox.add(
        name="Suspended", email=new_email("suspended"), password_hash=None, role=Role.ADMIN
    )
    assert await outbox.update(suspended, {"is_active": False})
    claimed = await outbox.add(
        name="Squatter", email=new_email("claimed"), password_hash=None, role=Role.CUSTOMER
    )
    assert await outbox.claim(claimed, {"name": "claimed", "email_verified": True})
    assert await outbox.delete(customer.id)
    await verify_pacts(
        USERS_SERVICE_EVENTS,
        messages={
            CREATED: await recorded_event(CREATED, str(customer.id)),
            f"{UPDATED}: an admin became a customer": await recorded_event(
                UPDATED, str(demoted.id)
            ),
            f"{UPDATED}: an admin was suspended": await recorded_event(UPDATED, str(suspended.id)),
            DELETED: await recorded_event(DELETED, str(customer.id)),
            CLAIMED: await recorded_event(CLAIMED, str(claimed.id)),
        },
    )
