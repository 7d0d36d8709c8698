"""webhooks-service settings: development conveniences, refused in production."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from api_testkit.fixtures import environment_without
from webhooks_service.settings import Settings

clean_environment = environment_without(
    "APP_ENV",
    "WEBHOOK_ALLOW_PRIVATE",
    "WEBHOOK_ALLOWED_HOSTS",
    "WEBHOOK_SECRETS_KEY_FILE",
    "WEBHOOK_SECRET_GRACE_S",
)
KEY_FILE = "/run/secrets/webhook_secrets_key"


def production(**values: Any) -> Settings:
    return Settings(environment="production", secrets_key_file=Path(KEY_FILE), **values)


def test_production_starts_with_the_defaults_and_a_key_file() -> None:
    settings = production()
    assert settings.allow_private is False
    assert settings.allowed_hosts == ()
    assert settings.secret_grace_s == 24 * 3600


def test_production_refuses_to_start_without_the_secrets_key_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("APP_ENV", "production")
    with pytest.raises(ValidationError, match="WEBHOOK_SECRETS_KEY_FILE must name the key file"):
        Settings()
    monkeypatch.setenv("WEBHOOK_SECRETS_KEY_FILE", KEY_FILE)
    assert Settings().secrets_key_file == Path(KEY_FILE)


def test_development_seals_with_a_key_it_creates_when_none_is_named() -> None:
    assert Settings().secrets_key_file is None


def test_development_allows_private_addresses_and_loopback_hosts() -> None:
    settings = Settings(allow_private=True, allowed_hosts=("127.0.0.1", "localhost"))
    assert settings.allow_private is True


def test_production_refuses_webhook_allow_private(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APP_ENV", "production")
    monkeypatch.setenv("WEBHOOK_SECRETS_KEY_FILE", KEY_FILE)
    monkeypatch.setenv("WEBHOOK_ALLOW_PRIVATE", "1")
    with pytest.raises(ValidationError, match=r"WEBHOOK_ALLOW_PRIVATE=1 .* refused when APP_ENV"):
        Settings()


@pytest.mark.parametrize(
    "hosts",
    [
        "127.0.0.1",
        "hooks.example.com,10.0.0.5",
        "localhost",
        "api.localhost",
        "[::1]",
        "169.254.169.254",
        "fec0::1",
        "::ffff:192.168.1.1",
    ],
)
def test_production_refuses_allowed_hosts_that_are_not_public(
    monkeypatch: pytest.MonkeyPatch, hosts: str
) -> None:
    monkeypatch.setenv("APP_ENV", "production")
    monkeypatch.setenv("WEBHOOK_SECRETS_KEY_FILE", KEY_FILE)
    monkeypatch.setenv("WEBHOOK_ALLOWED_HOSTS", hosts)
    with pytest.raises(ValidationError, match="WEBHOOK_ALLOWED_HOSTS names hosts that are not"):
        Settings()


def test_production_accepts_allowed_hosts_that_are_public_names_or_addresses() -> None:
    settings = production(allowed_hosts=("hooks.example.com", "93.184.215.14"))
    assert settings.allowed_hosts == ("hooks.example.com", "93.184.215.14")


def test_one_address_may_hold_fewer_streams_than_the_whole_process() -> None:
    settings = Settings()
    assert (settings.stream_max_per_address, settings.stream_max) == (50, 1000)
    assert Settings(stream_max=10, stream_max_per_address=9).stream_max_per_address == 9
    with pytest.raises(ValidationError, match=r"EVENTS_STREAM_MAX_PER_ADDRESS .* must be below"):
        Settings(stream_max=10, stream_max_per_address=10)
