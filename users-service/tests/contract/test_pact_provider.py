"""users-service keeps every contract its consumers committed (``contracts/pacts/*-users-service
.json``): their HTTP requests replayed on a real users-service process with its own database.

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

from api_testkit.actors import access_token, customer_caller
from api_testkit.neighbours import UsersService, running_users_service
from api_testkit.pacts import USERS_SERVICE, verify_pacts


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[UsersService]:
    async with running_users_service(tmp_path_factory.mktemp("users")) as service:
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
            },
        )
