"""Fixtures chain: settings → app → running server → HTTP client, on a real database."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from sanic import Sanic

from api_shared.database import migrate
from api_shared.testing import serve_in_process, test_database
from users_service.app import create_app
from users_service.database import database_config
from users_service.settings import Settings


@pytest.fixture(scope="session")
async def settings() -> AsyncIterator[Settings]:
    async with test_database("users") as url:
        settings = Settings(database_url=url, environment="development")
        await migrate(database_config(settings))
        yield settings


@pytest.fixture(scope="session")
async def base_url(settings: Settings) -> AsyncIterator[str]:
    Sanic.test_mode = True
    async with serve_in_process(create_app(settings)) as url:
        yield url


@pytest.fixture
async def client(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url) as client:
        yield client
