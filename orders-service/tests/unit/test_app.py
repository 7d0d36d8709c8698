"""The application factory wires real HTTP clients and keys from settings unless given fakes."""

from __future__ import annotations

import pytest
from sanic import Sanic

from api_shared.auth.keys import JwksKeySource
from api_shared.background import BackgroundTask
from api_shared.frame import frame_of
from api_shared.http import HttpSession
from api_shared.standing import CallerCheck
from api_testkit.tokens import TestSigner
from api_testkit.upstream_fakes import FakeBookCatalog, FakeStanding, FakeUserDirectory
from orders_service.app import create_app
from orders_service.clients import BooksGraphqlCatalog, UsersServiceDirectory
from orders_service.context import wire
from orders_service.settings import Settings


def test_without_fakes_the_context_talks_to_the_configured_upstreams() -> None:
    settings = Settings(
        books_graphql_url="http://books.test/graphql",
        users_service_urls=["http://users.test"],
        jwks_url="http://users.test/.well-known/jwks.json",
        jwt_issuer="issuer.test",
        jwt_audience="audience.test",
    )

    context = wire(settings)

    service = context.orders
    assert isinstance(service.catalog, BooksGraphqlCatalog)
    assert service.catalog.url == "http://books.test/graphql"
    assert isinstance(service.users, UsersServiceDirectory)
    assert service.users.users.base_urls == ["http://users.test"]
    assert isinstance(context.standing, CallerCheck)
    assert context.standing.users is service.users.users  # one replica rotation for both
    assert service.catalog.http is service.users.users.http  # one session per process
    assert service.catalog.http in context.resources  # opened and closed with the server
    keys = context.verifier.keys
    assert isinstance(keys, JwksKeySource)
    assert keys.url == "http://users.test/.well-known/jwks.json"
    assert keys.http is service.catalog.http  # the JWKS too, through the one session
    assert context.resources.index(keys.http) < context.resources.index(
        next(job for job in context.resources if getattr(job, "name", "") == "jwks_refresh")
    )  # the session is open before the first fetch
    assert (context.verifier.issuer, context.verifier.audience) == ("issuer.test", "audience.test")
    jobs = {job.name for job in context.resources if isinstance(job, BackgroundTask)}
    assert jobs == {"jwks_refresh", "purge_idempotency_records"}


def test_given_parts_are_used_as_they_are_and_nothing_is_built_for_them() -> None:
    catalog, users, verifier = FakeBookCatalog(), FakeUserDirectory(), TestSigner().verifier()
    standing = FakeStanding()

    context = wire(Settings(), verifier=verifier, catalog=catalog, users=users, standing=standing)

    assert context.orders.catalog is catalog
    assert context.orders.users is users
    assert context.standing is standing
    assert context.verifier is verifier
    assert not any(isinstance(part, HttpSession) for part in context.resources)
    jobs = [job.name for job in context.resources if isinstance(job, BackgroundTask)]
    assert jobs == ["purge_idempotency_records"]


def test_the_app_serves_the_context_it_is_given() -> None:
    Sanic.test_mode = True
    settings = Settings()
    context = wire(
        settings, catalog=FakeBookCatalog(), users=FakeUserDirectory(), standing=FakeStanding()
    )

    app = create_app(settings, context=context)

    assert app.ctx.context is context
    exported = {family.name for family in frame_of(app).metrics.collect()}
    assert "outbox_relay_up" in exported  # the events resource brought its metrics


def test_settings_come_from_the_environment_with_documented_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in (
        "ORDERS_PORT",
        "BOOKS_GRAPHQL_URL",
        "USERS_SERVICE_URL",
        "ORDERS_UPSTREAM_TIMEOUT_S",
        "JWKS_URL",
        "JWT_ISSUER",
        "JWT_AUDIENCE",
    ):
        monkeypatch.delenv(name, raising=False)
    defaults = Settings()
    monkeypatch.setenv("BOOKS_GRAPHQL_URL", "http://books:4000/graphql")
    monkeypatch.setenv("ORDERS_UPSTREAM_TIMEOUT_S", "0.5")
    monkeypatch.setenv("USERS_SERVICE_URL", "http://users-a:8001/, http://users-b:8001")
    monkeypatch.setenv("JWKS_URL", "http://users-a:8001/.well-known/jwks.json")
    monkeypatch.setenv("JWT_ISSUER", "issuer.example")

    configured = Settings()

    assert defaults.port == 8002
    assert defaults.books_graphql_url == "http://127.0.0.1:4000/graphql"
    assert defaults.users_service_urls == ["http://127.0.0.1:8001"]
    assert defaults.upstream_timeout_s == 2.0
    assert defaults.jwks_url == "http://127.0.0.1:8001/.well-known/jwks.json"
    assert (defaults.jwt_issuer, defaults.jwt_audience) == ("users-service", "api-platform")
    assert configured.books_graphql_url == "http://books:4000/graphql"
    assert configured.upstream_timeout_s == 0.5
    assert configured.users_service_urls == ["http://users-a:8001", "http://users-b:8001"]
    assert configured.jwks_url == "http://users-a:8001/.well-known/jwks.json"
    assert configured.jwt_issuer == "issuer.example"
