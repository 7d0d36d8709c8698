"""The application factory wires real HTTP clients from settings unless given fakes."""

from __future__ import annotations

import pytest
from sanic import Sanic

from api_shared.auth import JwksKeySource
from orders_service.app import create_app
from orders_service.clients import BooksGraphqlCatalog, UsersServiceDirectory
from orders_service.settings import Settings
from orders_service.testing import FakeBookCatalog, FakeUserDirectory


def test_without_fakes_the_app_talks_to_the_configured_upstreams(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    Sanic.test_mode = True
    monkeypatch.setenv("JWKS_URL", "http://users.test/.well-known/jwks.json")
    settings = Settings(
        books_graphql_url="http://books.test/graphql", users_service_urls=["http://users.test"]
    )

    app = create_app(settings)

    service = app.ctx.order_service
    assert isinstance(service.catalog, BooksGraphqlCatalog)
    assert service.catalog.url == "http://books.test/graphql"
    assert isinstance(service.users, UsersServiceDirectory)
    assert service.users.base_urls == ["http://users.test"]
    assert service.catalog.http is service.users.http  # one session per process
    keys = app.ctx.token_verifier.keys
    assert isinstance(keys, JwksKeySource)
    assert keys.url == "http://users.test/.well-known/jwks.json"


def test_given_fakes_are_used_as_they_are() -> None:
    Sanic.test_mode = True
    catalog, users = FakeBookCatalog(), FakeUserDirectory()

    app = create_app(Settings(), catalog=catalog, users=users)

    assert app.ctx.order_service.catalog is catalog
    assert app.ctx.order_service.users is users


def test_settings_come_from_the_environment_with_documented_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in (
        "ORDERS_PORT",
        "BOOKS_GRAPHQL_URL",
        "USERS_SERVICE_URL",
        "ORDERS_UPSTREAM_TIMEOUT_S",
    ):
        monkeypatch.delenv(name, raising=False)
    defaults = Settings()
    monkeypatch.setenv("BOOKS_GRAPHQL_URL", "http://books:4000/graphql")
    monkeypatch.setenv("ORDERS_UPSTREAM_TIMEOUT_S", "0.5")
    monkeypatch.setenv("USERS_SERVICE_URL", "http://users-a:8001/, http://users-b:8001")

    configured = Settings()

    assert defaults.port == 8002
    assert defaults.books_graphql_url == "http://127.0.0.1:4000/graphql"
    assert defaults.users_service_urls == ["http://127.0.0.1:8001"]
    assert defaults.upstream_timeout_s == 2.0
    assert configured.books_graphql_url == "http://books:4000/graphql"
    assert configured.upstream_timeout_s == 0.5
    assert configured.users_service_urls == ["http://users-a:8001", "http://users-b:8001"]
