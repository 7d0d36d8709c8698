"""Fixtures chain: settings → app → running server → HTTP client, on a real database.

Callers are real: users of a users-service that runs as a process of its own for the session
(``api_testkit.neighbours``), with the tokens it issued, which the app verifies with its
published keys and confirms with it (its word on standing). The app checks endpoint URLs as
in production (WEBHOOK_ALLOW_PRIVATE unset): hosts resolve through the system's resolver.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from api_shared.types import App
from api_testkit.actors import admin_caller, customer_caller
from api_testkit.callers import Caller
from api_testkit.databases import migrated_settings
from api_testkit.in_process import serve_in_process
from api_testkit.neighbours import UsersService, running_users_service
from webhooks_service.app import create_app
from webhooks_service.context import wire
from webhooks_service.database import database_config
from webhooks_service.secret_box import SecretBox, new_key
from webhooks_service.settings import Settings


@pytest.fixture(scope="session")
async def users_service(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[UsersService]:
    async with running_users_service(tmp_path_factory.mktemp("users")) as users:
        yield users


@pytest.fixture(scope="session")
async def settings(users_service: UsersService) -> AsyncIterator[Settings]:
    def on(url: str) -> Settings:
        return Settings(
            database_url=url,
            environment="development",
            allow_private=False,
            jwks_url=users_service.jwks_url,
            users_service_urls=[users_service.url],
        )

    async with migrated_settings("webhooks", on, database_config) as settings:
        yield settings


@pytest.fixture(scope="session")
def secrets_key() -> bytes:
    """The key endpoint secrets are sealed with (WEBHOOK_SECRETS_KEY_FILE's, in production)."""
    return new_key()


@pytest.fixture(scope="session")
def box(secrets_key: bytes) -> SecretBox:
    return SecretBox([secrets_key])


@pytest.fixture(scope="session")
def app(settings: Settings, box: SecretBox) -> App:
    return create_app(settings, context=wire(settings, box=box))


@pytest.fixture(scope="session")
async def base_url(app: App) -> AsyncIterator[str]:
    async with serve_in_process(app) as url:
        yield url


@pytest.fixture(scope="session")
async def users_api(users_service: UsersService) -> AsyncIterator[httpx.AsyncClient]:
    """A client of users-service itself, where the tests sign users up and log them in."""
    async with httpx.AsyncClient(base_url=users_service.url, timeout=15.0) as client:
        yield client


@pytest.fixture
async def admin(users_api: httpx.AsyncClient, users_service: UsersService) -> Caller:
    """The admin users-service ensured at start-up, freshly logged in."""
    return await admin_caller(users_api, users_service.admin_email, users_service.admin_password)


@pytest.fixture
async def customer(users_api: httpx.AsyncClient) -> Caller:
    return await customer_caller(users_api)
