"""Fixtures chain: settings → app → running server → HTTP client, on a real database.

Tortoise ORM 1.x keeps its state in a context; the served app owns the process-wide one.
Anything else a test does with the ORM (migrating a fresh database, reading it back) runs in
an isolated ``TortoiseContext``, so it never re-initialises or closes the served app's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import httpx
import pytest
from sanic import Sanic
from tortoise.context import TortoiseContext

from api_shared.database import migrate
from api_shared.testing import serve_in_process, temporary_database
from books_graphql.app import create_app
from books_graphql.database import database_config
from books_graphql.repository import BookRepository
from books_graphql.settings import Settings

OpenCatalog = Callable[[str], AbstractAsyncContextManager[BookRepository]]


@pytest.fixture(scope="session", autouse=True)
def sanic_test_mode() -> None:
    # Tests start several apps in one process; Sanic's start-up code rewriting (TouchUp)
    # only supports that in test mode, which must be on before the first app starts.
    Sanic.test_mode = True


async def migrated(url: str) -> str:
    async with TortoiseContext():
        await migrate(database_config(Settings(database_url=url)))
    return url


@pytest.fixture(scope="session")
async def settings() -> AsyncIterator[Settings]:
    async with temporary_database("books") as url:
        yield Settings(database_url=await migrated(url), environment="development")


@pytest.fixture(scope="session")
async def base_url(settings: Settings) -> AsyncIterator[str]:
    async with serve_in_process(create_app(settings)) as url:
        yield url


@pytest.fixture
async def client(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url) as client:
        yield client


@pytest.fixture
async def fresh_database() -> AsyncIterator[str]:
    """The URL of an empty, migrated database of its own (for tests that write books)."""
    async with temporary_database("books") as url:
        yield await migrated(url)


@pytest.fixture
def open_catalog() -> OpenCatalog:
    """``async with open_catalog(url) as books``: the real repository on that database."""

    @asynccontextmanager
    async def opened(url: str) -> AsyncIterator[BookRepository]:
        async with TortoiseContext() as context:
            await context.init(config=database_config(Settings(database_url=url)))
            yield BookRepository()

    return opened


@pytest.fixture(scope="session")
def introspection_query() -> str:
    return (Path(__file__).parent / "data" / "graphiql_introspection.graphql").read_text()
