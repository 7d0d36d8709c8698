"""Settings every service shares, read from the environment (12-factor)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, TypeVar

from pydantic import BeforeValidator, Field
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

MIB = 1024 * 1024

_T = TypeVar("_T")


def split_commas(value: object) -> object:
    """``a, b,,c`` as ``["a", "b", "c"]``; a value that is not a string is left to pydantic."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def split_urls(value: object) -> object:
    """As ``split_commas``, each URL without its trailing slash (paths are appended to it)."""
    parts = split_commas(value)
    if isinstance(value, str) and isinstance(parts, list):
        return [part.rstrip("/") for part in parts]
    return parts


CommaList = Annotated[_T, NoDecode, BeforeValidator(split_commas)]
"""A list (or tuple) written ``a,b,c`` in its variable: ``CommaList[list[str]]``.

NoDecode keeps pydantic-settings from reading the variable as JSON first."""

UrlList = Annotated[list[str], NoDecode, BeforeValidator(split_urls)]
"""URLs (or origins) written ``http://a:8001,http://b:8001`` in their variable."""


class ConfigurationError(Exception):
    """Start-up refused because of missing or unsafe configuration; the message says which."""


class PlatformSettings(BaseSettings):
    """The base of every settings class: how a setting is read from the environment.

    Each subclass is a family of settings (``family``, the section of docs/configuration.md
    its variables are documented in; each field's meaning is its ``description``), and a
    service's ``Settings`` composes the families it reads by inheritance. A field may say
    more about its default in ``json_schema_extra``: ``default_note`` (bracketed after the
    value) or ``shown_default`` (instead of the value); tools/configuration_docs.py reads them.

    The config is written out here, as a literal, so that pydantic's mypy plugin sees
    populate_by_name and accepts field names in ``Settings(port=1)``."""

    family: ClassVar[str]

    model_config = SettingsConfigDict(
        # Each setting is read from its documented variable (its validation_alias) only.
        # populate_by_name lets code and tests pass field names (Settings(port=1)), but it would
        # also read the environment by field name: honcho sets PORT for every process, and a
        # stray DATABASE_URL would point every service at one database. The prefix keeps field
        # names out of the environment; documented variables are aliases, which it does not touch.
        populate_by_name=True,
        env_prefix="_NOT_A_SETTING_",
        extra="ignore",
        frozen=True,
        hide_input_in_errors=True,  # a settings error must not print the environment (passwords)
    )


class EnvironmentSettings(PlatformSettings):
    """``APP_ENV``: development (the defaults of ``make run``) or production (which refuses
    them). Mixed into every settings class whose checks depend on it."""

    family: ClassVar[str] = "Common and databases"

    environment: Literal["development", "production"] = Field(
        default="development",
        validation_alias="APP_ENV",
        description="`production` refuses development defaults (signing key, admin password, "
        "webhook secrets key, `WEBHOOK_ALLOW_PRIVATE`)",
    )

    @property
    def is_production(self) -> bool:
        return self.environment == "production"


class ServiceSettings(EnvironmentSettings):
    """Common settings; each service subclasses this and names its own port and database."""

    host: str = Field(
        default="127.0.0.1",
        validation_alias="HOST",
        description="address to listen on (`0.0.0.0` in containers)",
    )
    port: int = 0  # each service's own variable (its ports family) overrides it
    log_level: str = Field(
        default="INFO",
        validation_alias="LOG_LEVEL",
        description="JSON log lines on stdout ([operations](operations.md#logs))",
    )
    max_body_bytes: int = Field(
        default=MIB,
        gt=0,
        validation_alias="MAX_BODY_BYTES",
        description="larger bodies get 413 PAYLOAD_TOO_LARGE (request line and headers are "
        "capped at Sanic's 8 KiB, also 413: the contract has no 431)",
    )


class TokenSettings(PlatformSettings):
    """What every verifier of tokens must agree on with users-service, which issues them."""

    family: ClassVar[str] = "Tokens and sessions"

    jwt_issuer: str = Field(
        default="users-service",
        validation_alias="JWT_ISSUER",
        description="`iss` of issued tokens, required by every verifier",
    )
    jwt_audience: str = Field(
        default="api-platform",
        validation_alias="JWT_AUDIENCE",
        description="`aud` of issued tokens, required by every verifier",
    )
    jwks_url: str = Field(
        default="http://127.0.0.1:8001/.well-known/jwks.json",
        validation_alias="JWKS_URL",
        description="where users-service's public keys are fetched, to verify its tokens",
    )
