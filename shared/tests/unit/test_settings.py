"""Settings come from their documented variables only."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import Field

from api_shared.settings import CommaList, ServiceSettings, TokenSettings, UrlList


def test_documented_variables_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APP_ENV", "production")
    monkeypatch.setenv("MAX_BODY_BYTES", "2048")
    monkeypatch.setenv("JWT_AUDIENCE", "elsewhere")

    assert ServiceSettings().is_production
    assert ServiceSettings().max_body_bytes == 2048
    assert TokenSettings().jwt_audience == "elsewhere"


def test_field_names_in_the_environment_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    # honcho sets PORT for every process; ENVIRONMENT or JWKS_URL-like names must not leak in.
    monkeypatch.setenv("PORT", "5000")
    monkeypatch.setenv("ENVIRONMENT", "production")
    monkeypatch.setenv("MAX_BODY_BYTES", "4096")

    settings = ServiceSettings()

    assert settings.port == 0
    assert settings.environment == "development"
    assert settings.max_body_bytes == 4096


def test_code_may_still_pass_field_names() -> None:
    assert ServiceSettings(port=1234, environment="production").port == 1234


class _Lists(ServiceSettings):
    names: CommaList[list[str]] = Field(default=[], validation_alias="TEST_NAMES")
    paths: CommaList[tuple[Path, ...]] = Field(default=(), validation_alias="TEST_PATHS")
    urls: UrlList = Field(default=[], validation_alias="TEST_URLS")


def test_comma_lists_are_split_and_trimmed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_NAMES", " a, b,,c ,")
    monkeypatch.setenv("TEST_PATHS", "one.pem, two.pem")
    monkeypatch.setenv("TEST_URLS", "http://a:8001/, http://b:8001")

    settings = _Lists()

    assert settings.names == ["a", "b", "c"]
    assert settings.paths == (Path("one.pem"), Path("two.pem"))
    assert settings.urls == ["http://a:8001", "http://b:8001"]


def test_a_comma_list_is_not_read_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_NAMES", '["a"]')

    assert _Lists().names == ['["a"]']
