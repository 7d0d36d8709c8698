"""Fixtures chain: settings → app → running server → HTTP client, on a real database.

Tortoise ORM 1.x keeps its state in a context; the served app owns the process-wide one.
Anything else a test does with the ORM (migrating a fresh database, reading it back) runs in
an isolated ``TortoiseContext``, so it never re-initialises or closes the served app's.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest
from tortoise.context import TortoiseContext

from api_testkit.databases import migrated_settings
from api_testkit.in_process import serve_in_process
from api_testkit.node import npm_install
from api_testkit.paths import CACHE
from api_testkit.ports import free_port
from api_testkit.readiness import process_exited, until_ready
from books_graphql.app import create_app
from books_graphql.database import database_config
from books_graphql.repository import BookRepository
from books_graphql.settings import Settings

OpenCatalog = Callable[[str], AbstractAsyncContextManager[BookRepository]]
ServeCatalog = Callable[..., AbstractAsyncContextManager[str]]
PROCESS_START_TIMEOUT_S = 60.0


def development(url: str) -> Settings:
    return Settings(database_url=url, environment="development")


@pytest.fixture(scope="session")
async def settings() -> AsyncIterator[Settings]:
    async with migrated_settings("books", development, database_config) as settings:
        yield settings


@pytest.fixture(scope="session")
async def base_url(settings: Settings) -> AsyncIterator[str]:
    async with serve_in_process(create_app(settings)) as url:
        yield url


@pytest.fixture
async def fresh_database() -> AsyncIterator[str]:
    """The URL of an empty, migrated database of its own (for tests that write books)."""
    async with migrated_settings("books", development, database_config) as settings:
        yield settings.database_url


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


NodePackages = Callable[[str, tuple[str, ...]], Awaitable[Path]]


@pytest.fixture(scope="session")
def node_packages() -> NodePackages:
    """``await node_packages(name, packages)``: a folder of .cache/ (git-ignored) holding them.

    npm installs on first use; a node script run from that folder resolves them.
    """
    cache = CACHE

    async def install(name: str, packages: tuple[str, ...]) -> Path:
        folder = cache / name
        await npm_install(folder, packages)
        return folder

    return install


@pytest.fixture
def serve_catalog(tmp_path: Path) -> ServeCatalog:
    """``async with serve_catalog(url, **env) as base_url``: ``python -m books_graphql serve``.

    A real server process on that database (no seeding unless ``BOOKS_SEED_FILE`` is
    given), stopped on exit; its log is in the test's temporary directory.
    """

    @asynccontextmanager
    async def served(database_url: str, **environment: str) -> AsyncIterator[str]:
        port = free_port()
        log_path = tmp_path / f"books-graphql-{port}.log"
        env = {
            **os.environ,
            "BOOKS_DATABASE_URL": database_url,
            "BOOKS_PORT": str(port),
            "BOOKS_SEED_FILE": "",
            "LOG_LEVEL": "WARNING",
            **environment,
        }
        with log_path.open("wb") as log:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "books_graphql", "serve",
                env=env, stdout=log, stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip
            url = f"http://127.0.0.1:{port}"
            try:
                await until_ready(
                    f"{url}/ready",
                    process_exited(process, log_path),
                    timeout_s=PROCESS_START_TIMEOUT_S,
                    interval_s=0.1,
                )
                yield url
            finally:
                if process.returncode is None:
                    process.terminate()
                await asyncio.wait_for(process.wait(), PROCESS_START_TIMEOUT_S)

    return served
