"""Settings from the environment, with the documented names and defaults."""

from __future__ import annotations

import pytest

from api_testkit.fixtures import environment_without
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


clean_environment = environment_without(*ENVIRONMENT)


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
