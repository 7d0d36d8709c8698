"""Request and response shapes of the users and token APIs (one per direction)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import Field, field_serializer, field_validator

from api_shared.representation import InputModel, WireModel, format_timestamp
from users_service.emails import normalize_email
from users_service.models import Role
from users_service.passwords import check_password

NAME_MAX_LENGTH = 100


def _clean_name(value: str) -> str:
    value = value.strip()
    if not 1 <= len(value) <= NAME_MAX_LENGTH:
        raise ValueError(f"must be 1 to {NAME_MAX_LENGTH} characters")
    return value


def _clean_email(value: str | None) -> str | None:
    return None if value is None else normalize_email(value)


def _not_null(value: object) -> object:
    # Only runs for values the client sent: an absent field keeps its None default.
    if value is None:
        raise ValueError("must not be null")
    return value


class UserCreate(InputModel):
    name: str
    email: str | None = None
    password: str | None = None
    # strict=False: the JSON string "admin" becomes Role.ADMIN.
    role: Role | None = Field(default=None, strict=False)

    _name = field_validator("name")(_clean_name)
    _email = field_validator("email")(_clean_email)
    _password = field_validator("password")(check_password)
    _not_null = field_validator("password", "role", mode="before")(_not_null)


class UserUpdate(InputModel):
    """A partial update: absent fields are kept; ``email: null`` removes the email."""

    name: str | None = None
    email: str | None = None
    password: str | None = None
    role: Role | None = Field(default=None, strict=False)

    _name = field_validator("name")(_clean_name)
    _email = field_validator("email")(_clean_email)
    _password = field_validator("password")(check_password)
    _not_null = field_validator("name", "password", "role", mode="before")(_not_null)


class UserPublic(WireModel):
    id: UUID
    name: str
    email: str | None
    role: Role
    created_at: datetime
    updated_at: datetime

    @field_serializer("created_at", "updated_at")
    def _timestamp(self, value: datetime) -> str:
        return format_timestamp(value)


class TokenRequest(InputModel):
    # Not validated beyond type: a malformed email is simply an unknown one (401, not 400).
    email: str
    password: str


class TokenPublic(WireModel):
    access_token: str
    token_type: str = "Bearer"  # noqa: S105 - the RFC 6750 scheme name, not a secret
    expires_in: int
