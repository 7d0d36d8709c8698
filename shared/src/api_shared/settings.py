"""Settings every service shares, read from the environment (12-factor)."""

from __future__ import annotations

from typing import Annotated, Literal, TypeVar

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

    The config is written out here, as a literal, so that pydantic's mypy plugin sees
    populate_by_name and accepts field names in ``Settings(port=1)``."""

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

    environment: Literal["development", "production"] = Field(
        default="development", validation_alias="APP_ENV"
    )

    @property
    def is_production(self) -> bool:
        return self.environment == "production"


class ServiceSettings(EnvironmentSettings):
    """Common settings; each service subclasses this and names its own port and database."""

    host: str = Field(default="127.0.0.1", validation_alias="HOST")
    port: int = 0
    log_level: str = Field(default="INFO", validation_alias="LOG_LEVEL")
    max_body_bytes: int = Field(default=MIB, gt=0, validation_alias="MAX_BODY_BYTES")


class TokenSettings(PlatformSettings):
    """What every verifier of tokens must agree on with users-service, which issues them."""

    jwt_issuer: str = Field(default="users-service", validation_alias="JWT_ISSUER")
    jwt_audience: str = Field(default="api-platform", validation_alias="JWT_AUDIENCE")
    jwks_url: str = Field(
        default="http://127.0.0.1:8001/.well-known/jwks.json", validation_alias="JWKS_URL"
    )
