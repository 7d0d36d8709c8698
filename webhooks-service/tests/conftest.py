"""Fixtures chain: settings → app → running server → HTTP client, on a real database.

Tokens are real (TestSigner); users-service's word on callers is a fake that believes
each token's claims unless a test says otherwise (``standing``). The app checks endpoint
URLs as in production (WEBHOOK_ALLOW_PRIVATE unset): hosts resolve through the system's
resolver.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from api_shared.database import migrate
from api_shared.types import App
from api_testkit.callers import Caller
from api_testkit.databases import temporary_database
from api_testkit.in_process import serve_in_process
from api_testkit.tokens import TestSigner
from api_testkit.upstream_fakes import FakeStanding
from webhooks_service.app import create_app
from webhooks_service.context import wire
from webhooks_service.database import database_config
from webhooks_service.secret_box import SecretBox, new_key
from webhooks_service.settings import Settings


@pytest.fixture(scope="session")
async def settings() -> AsyncIterator[Settings]:
    async with temporary_database("webhooks") as url:
        settings = Settings(database_url=url, environment="development", allow_private=False)
        await migrate(database_config(settings))
        yield settings


@pytest.fixture(scope="session")
def signer() -> TestSigner:
    return TestSigner()


@pytest.fixture(scope="session")
def fake_standing() -> FakeStanding:
    return FakeStanding()


@pytest.fixture
def standing(fake_standing: FakeStanding) -> Iterator[FakeStanding]:
    fake_standing.reset()
    yield fake_standing
    fake_standing.reset()


@pytest.fixture(scope="session")
def secrets_key() -> bytes:
    """The key endpoint secrets are sealed with (WEBHOOK_SECRETS_KEY_FILE's, in production)."""
    return new_key()


@pytest.fixture(scope="session")
def box(secrets_key: bytes) -> SecretBox:
    return SecretBox([secrets_key])


@pytest.fixture(scope="session")
def app(settings: Settings, signer: TestSigner, fake_standing: FakeStanding, box: SecretBox) -> App:
    context = wire(settings, verifier=signer.verifier(), standing=fake_standing, box=box)
    return create_app(settings, context=context)


@pytest.fixture(scope="session")
async def base_url(app: App) -> AsyncIterator[str]:
    async with serve_in_process(app) as url:
        yield url


@pytest.fixture
def admin(signer: TestSigner) -> Caller:
    user_id = str(uuid.uuid4())
    return Caller(user_id, signer.token(user_id, role="admin"))


@pytest.fixture
def customer(signer: TestSigner) -> Caller:
    user_id = str(uuid.uuid4())
    return Caller(user_id, signer.token(user_id))
