"""users-service settings: strong defaults, development conveniences, production refusals."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from argon2 import DEFAULT_MEMORY_COST, DEFAULT_TIME_COST
from pydantic import SecretStr, ValidationError

from api_shared.auth import Role
from api_testkit.fixtures import environment_without
from users_service.policies import KeyPolicy, NoExpiryFor
from users_service.settings import (
    DEV_ADMIN_EMAIL,
    DEV_ADMIN_PASSWORD,
    AdminPasswordFileError,
    Settings,
)

VARIABLES = (
    "API_KEY_NO_EXPIRY_FOR",
    "API_KEY_MAX_LIFETIME_S",
    "RECENT_AUTHENTICATION_S",
    "APP_ENV",
    "JWT_PRIVATE_KEY_FILE",
    "JWT_PUBLIC_KEY_FILES",
    "ADMIN_EMAIL",
    "ADMIN_PASSWORD",
    "ARGON2_TIME_COST",
    "ARGON2_MEMORY_KIB",
    "ARGON2_PARALLELISM",
    "ACCESS_TOKEN_TTL_S",
    "JWT_ISSUER",
    "JWT_AUDIENCE",
    "USERS_PORT",
    "USERS_DATABASE_URL",
    "ARGON2_MEMORY_BUDGET_MIB",
    "ARGON2_SLOTS",
    "ARGON2_SLOT_WAIT_S",
    "USERS_MAX_BODY_BYTES",
    "MAX_BODY_BYTES",
)


clean_environment = environment_without(*VARIABLES)


def production(**values: Any) -> Settings:
    return Settings(environment="production", jwt_private_key_file=Path("key.pem"), **values)


def test_the_defaults_are_the_contracts_and_argon2_is_strong() -> None:
    settings = Settings()

    assert (settings.port, settings.access_token_ttl_s) == (8001, 900)
    assert (settings.jwt_issuer, settings.jwt_audience) == ("users-service", "api-platform")
    assert settings.argon2_time_cost == DEFAULT_TIME_COST >= 2
    assert settings.argon2_memory_kib == DEFAULT_MEMORY_COST >= 19 * 1024


def test_the_api_key_policy_defaults_to_a_year_and_ten_minutes_and_names_who_is_exempt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy = Settings().key_policy
    assert (policy.max_lifetime, policy.recent_authentication) == (
        timedelta(days=365),
        timedelta(minutes=10),
    )
    assert policy.no_expiry_for is NoExpiryFor.NOBODY
    monkeypatch.setenv("API_KEY_NO_EXPIRY_FOR", "admins")
    monkeypatch.setenv("API_KEY_MAX_LIFETIME_S", "86400")
    monkeypatch.setenv("RECENT_AUTHENTICATION_S", "300")

    configured = Settings().key_policy

    assert configured == KeyPolicy(timedelta(minutes=5), timedelta(days=1), NoExpiryFor.ADMINS)
    assert configured.no_expiry_for.allows(Role.ADMIN)
    assert not configured.no_expiry_for.allows(Role.CUSTOMER)
    monkeypatch.setenv("API_KEY_NO_EXPIRY_FOR", "forever")
    with pytest.raises(ValidationError):
        Settings()


def test_development_ensures_a_documented_default_admin() -> None:
    admin = Settings().admin

    assert admin is not None
    assert (admin.email, admin.password.get_secret_value()) == (DEV_ADMIN_EMAIL, DEV_ADMIN_PASSWORD)


def test_production_ensures_no_admin_unless_one_is_configured() -> None:
    assert production().admin is None


def test_the_configured_admin_email_is_normalised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADMIN_EMAIL", " Boss@Example.COM ")
    monkeypatch.setenv("ADMIN_PASSWORD", "boss-password")

    admin = Settings().admin

    assert admin is not None
    assert admin.email == "boss@example.com"


def test_retired_public_keys_are_a_comma_separated_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JWT_PUBLIC_KEY_FILES", "keys/a.pem, keys/b.pem,")

    assert Settings().jwt_public_key_files == (Path("keys/a.pem"), Path("keys/b.pem"))


def test_production_refuses_to_start_without_a_signing_key() -> None:
    with pytest.raises(ValidationError, match="JWT_PRIVATE_KEY_FILE"):
        Settings(environment="production")


def test_production_refuses_the_development_admin_password(tmp_path: Path) -> None:
    secret = tmp_path / "admin-password"
    secret.write_text(DEV_ADMIN_PASSWORD + "\n")
    settings = production(admin_email="ops@example.com", admin_password_file=secret)

    with pytest.raises(AdminPasswordFileError, match="development password"):
        _ = settings.admin


def test_the_admin_password_is_read_from_its_file_without_the_final_newline(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "admin-password"
    secret.write_text("a long password from a secret\n")

    settings = production(admin_email="ops@example.com", admin_password_file=secret)

    assert settings.admin is not None
    assert settings.admin.password.get_secret_value() == "a long password from a secret"


def test_production_refuses_the_admin_password_in_an_environment_variable() -> None:
    with pytest.raises(ValidationError, match="ADMIN_PASSWORD_FILE"):
        production(admin_email="ops@example.com", admin_password=SecretStr("long-enough-pw"))


@pytest.mark.parametrize(
    ("content", "problem"),
    [(None, "cannot be read"), ("short\n", "8 to 128"), (b"\xff\xfe-not-utf-8", "cannot be read")],
    ids=["missing", "too-short", "not-text"],
)
def test_an_unusable_admin_password_file_is_refused_naming_the_variable_once_read(
    tmp_path: Path, content: str | bytes | None, problem: str
) -> None:
    secret = tmp_path / "admin-password"
    if isinstance(content, bytes):
        secret.write_bytes(content)
    elif content is not None:
        secret.write_text(content)

    settings = Settings(admin_email="ops@example.com", admin_password_file=secret)

    with pytest.raises(AdminPasswordFileError, match=problem):
        _ = settings.admin  # read when the service starts serving, not by `migrate`


def test_an_admin_password_is_given_one_way_only(tmp_path: Path) -> None:
    secret = tmp_path / "admin-password"
    secret.write_text("a long password")
    with pytest.raises(ValidationError, match="not both"):
        Settings(
            admin_email="ops@example.com",
            admin_password=SecretStr("another long one"),
            admin_password_file=secret,
        )


@pytest.mark.parametrize(
    "weak", [{"argon2_memory_kib": 8}, {"argon2_time_cost": 1}], ids=["memory", "time"]
)
def test_production_refuses_weak_argon2_parameters(weak: dict[str, int]) -> None:
    with pytest.raises(ValidationError, match="Argon2"):
        production(**weak)


@pytest.mark.parametrize(
    "values",
    [{"admin_email": "ops@example.com"}, {"admin_password": SecretStr("ops-password")}],
    ids=["email-only", "password-only"],
)
def test_the_admin_email_and_password_come_together(values: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="together"):
        Settings(**values)


@pytest.mark.parametrize(
    "values",
    [
        {"admin_email": "not-an-email", "admin_password": SecretStr("long-enough")},
        {"admin_email": "ops@example.com", "admin_password": SecretStr("short")},
    ],
    ids=["email", "password"],
)
def test_an_invalid_admin_is_refused(values: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Settings(**values)


def test_a_refusal_never_prints_the_admin_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADMIN_EMAIL", "ops@example.com")
    monkeypatch.setenv("ADMIN_PASSWORD", "top-secret-password")
    monkeypatch.setenv("APP_ENV", "production")

    with pytest.raises(ValidationError) as caught:
        Settings()

    assert "top-secret-password" not in str(caught.value)


@pytest.mark.parametrize(
    ("variables", "slots"),
    [
        ({}, 4),  # 256 MiB over 64 MiB
        ({"ARGON2_MEMORY_BUDGET_MIB": "512", "ARGON2_MEMORY_KIB": "19456"}, 26),
        ({"ARGON2_MEMORY_BUDGET_MIB": "16"}, 1),  # never fewer than one
        ({"ARGON2_MEMORY_BUDGET_MIB": "16", "ARGON2_SLOTS": "3"}, 3),  # the override wins
    ],
)
def test_the_hashing_slots_come_from_the_memory_budget_unless_set(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], slots: int
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)

    assert Settings().argon2_slots == slots


@pytest.mark.parametrize(
    ("variables", "limit"),
    [
        ({"MAX_BODY_BYTES": "1048576"}, 16 * 1024),
        ({"USERS_MAX_BODY_BYTES": "8192"}, 8192),
        ({"MAX_BODY_BYTES": "4096"}, 4096),  # the platform's limit still caps it
    ],
)
def test_the_body_limit_is_16_kib_within_the_platforms(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], limit: int
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)

    assert Settings().body_limit == limit


def test_published_user_events_are_kept_a_day_whatever_the_order_history_keeps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EVENTS_HISTORY_RETENTION_S", "2592000")
    monkeypatch.delenv("USERS_OUTBOX_RETENTION_S", raising=False)
    assert Settings().events_history_retention_s == 86400

    monkeypatch.setenv("USERS_OUTBOX_RETENTION_S", "3600")
    assert Settings().events_history_retention_s == 3600
