"""Settings from the environment, with the documented names and defaults."""

from __future__ import annotations

import pytest

from api_testkit.fixtures import environment_without
from books_graphql.paging import MAX_PAGE_SIZE
from books_graphql.settings import DEFAULT_SEED_FILE, Settings

ENVIRONMENT = (
    "BOOKS_PORT",
    "BOOKS_DATABASE_URL",
    "BOOKS_SEED_FILE",
    "BOOKS_MAX_QUERY_BYTES",
    "BOOKS_MAX_QUERY_DEPTH",
    "BOOKS_MAX_QUERY_FIELDS",
    "BOOKS_QUERY_CACHE_SIZE",
    "BOOKS_GRAPHIQL_ASSETS_URL",
    "BOOKS_RESPONSE_CACHE_TTL_S",
    "BOOKS_RESPONSE_CACHE_BYTES",
    "BOOKS_CATALOG_CHECK_MS",
    "BOOKS_CATALOG_MAX_AGE_S",
    "BOOKS_HTTP_CACHE_MAX_AGE_S",
    "BOOKS_PERSISTED_QUERIES",
)
SWITCHES = ("BOOKS_INTROSPECTION", "BOOKS_GRAPHIQL")


clean_environment = environment_without(
    *ENVIRONMENT, *SWITCHES, "APP_ENV", "BOOKS_MAX_RESULT_ROWS", "BOOKS_MAX_QUERY_LIST_FIELDS"
)


def test_the_defaults() -> None:
    settings = Settings()

    assert settings.port == 4000
    assert settings.database_url == "sqlite://var/books.sqlite3"
    assert settings.seed_file == DEFAULT_SEED_FILE
    assert (settings.max_query_bytes, settings.max_query_depth, settings.max_query_fields) == (
        16_384,
        15,
        500,
    )
    assert settings.query_cache_size == 512
    assert settings.graphiql_assets_url is None
    assert settings.response_cache_ttl_s == 60.0
    assert (settings.catalog_check_ms, settings.catalog_max_age_s) == (5.0, 60.0)
    assert (settings.http_cache_max_age_s, settings.persisted_queries) == (0, 1000)
    assert settings.response_cache_bytes == 16 * 1024 * 1024
    assert settings.max_query_list_fields == 10
    assert settings.max_result_rows == 10 * MAX_PAGE_SIZE == 1000


def test_introspection_and_the_sandbox_are_on_in_development_and_off_in_production(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    development = Settings()
    monkeypatch.setenv("APP_ENV", "production")
    production = Settings()

    assert (development.introspection_on, development.graphiql_on) == (True, True)
    assert (production.introspection_on, production.graphiql_on) == (False, False)


@pytest.mark.parametrize("environment", ["development", "production"])
@pytest.mark.parametrize(("value", "on"), [("true", True), ("1", True), ("false", False)])
def test_each_switch_reads_its_variable_whatever_the_environment(
    monkeypatch: pytest.MonkeyPatch, environment: str, value: str, on: bool
) -> None:
    monkeypatch.setenv("APP_ENV", environment)
    for name in SWITCHES:
        monkeypatch.setenv(name, value)

    settings = Settings()

    assert (settings.introspection_on, settings.graphiql_on) == (on, on)


def test_an_empty_switch_means_the_environments_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APP_ENV", "production")
    for name in SWITCHES:
        monkeypatch.setenv(name, "")

    settings = Settings()

    assert (settings.introspection_on, settings.graphiql_on) == (False, False)


def test_the_row_budget_reads_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOKS_MAX_RESULT_ROWS", "10000")

    assert Settings().max_result_rows == 10_000


def test_every_setting_reads_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    values = dict(
        zip(ENVIRONMENT, ("4100", "postgres://db/books", "/data/books.csv", "100", "5", "50",
                          "10", "https://static.example.org/gq", "0.5", "1024", "2.5", "30", "300",
                          "50"), strict=True)
    )  # fmt: skip
    for name, value in values.items():
        monkeypatch.setenv(name, value)

    settings = Settings()

    assert settings.port == 4100
    assert settings.database_url == "postgres://db/books"
    assert str(settings.seed_file) == "/data/books.csv"
    assert (settings.max_query_bytes, settings.max_query_depth, settings.max_query_fields) == (
        100,
        5,
        50,
    )
    assert settings.query_cache_size == 10
    assert settings.graphiql_assets_url == "https://static.example.org/gq"
    assert (settings.response_cache_ttl_s, settings.response_cache_bytes) == (0.5, 1024)
    assert (settings.catalog_check_ms, settings.catalog_max_age_s) == (2.5, 30.0)
    assert (settings.http_cache_max_age_s, settings.persisted_queries) == (300, 50)


def test_empty_values_turn_seeding_and_self_hosting_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOKS_SEED_FILE", "")
    monkeypatch.setenv("BOOKS_GRAPHIQL_ASSETS_URL", " ")

    settings = Settings()

    assert settings.seed_file is None
    assert settings.graphiql_assets_url is None


@pytest.mark.parametrize("name", ["BOOKS_MAX_QUERY_DEPTH", "BOOKS_QUERY_CACHE_SIZE"])
def test_limits_must_be_positive(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "0")

    with pytest.raises(ValueError, match=name):
        Settings()
