"""Request and response shapes of the users and token APIs (one per direction)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import ConfigDict, Field, field_serializer, field_validator
from pydantic.json_schema import SkipJsonSchema

from api_shared.auth import Role
from api_shared.representation import (
    NOT_BLANK_PATTERN,
    InputModel,
    WireModel,
    format_timestamp,
)
from users_service.emails import (
    EMAIL_MAX_LENGTH,
    NOT_SPECIAL_USE_PATTERN,
    check_email_length,
    normalize_email,
)
from users_service.passwords import PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, check_password

NAME_MAX_LENGTH = 100

# What the validators below check, for the API documentation (they stay the source of truth).
NAME_SCHEMA: dict[str, Any] = {
    "minLength": 1,
    "maxLength": NAME_MAX_LENGTH,
    "pattern": NOT_BLANK_PATTERN,
}
EMAIL_SCHEMA: dict[str, Any] = {
    "format": "email",
    "maxLength": EMAIL_MAX_LENGTH,
    "pattern": NOT_SPECIAL_USE_PATTERN,
}
PASSWORD_SCHEMA: dict[str, Any] = {
    "minLength": PASSWORD_MIN_LENGTH,
    "maxLength": PASSWORD_MAX_LENGTH,
}
# A password is only usable with an email to log in with (UserService checks it): with
# ``password``, sign-up needs an email, and a change cannot remove it. Whether a change keeps
# the user an email depends on the stored user
# (docs/api.md#rules-the-openapi-document-cannot-state).
_EMAIL_PRESENT: dict[str, Any] = {"properties": {"email": {"type": "string"}}}
PASSWORD_NEEDS_EMAIL: dict[str, Any] = {
    "dependentSchemas": {"password": {"required": ["email"], **_EMAIL_PRESENT}}
}
PASSWORD_KEEPS_EMAIL: dict[str, Any] = {"dependentSchemas": {"password": _EMAIL_PRESENT}}
CURRENT_PASSWORD_SCHEMA: dict[str, Any] = {
    "description": "The caller's password: required with `password` or `email` when "
    "changing one's own user (not when an admin changes another user)",
}

# strict=False: the JSON string "admin" becomes Role.ADMIN.
LenientRole = Annotated[Role, Field(strict=False)]


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
    model_config = ConfigDict(json_schema_extra=PASSWORD_NEEDS_EMAIL)

    name: str = Field(json_schema_extra=NAME_SCHEMA)
    email: str | None = Field(default=None, json_schema_extra=EMAIL_SCHEMA)
    # SkipJsonSchema: absent is allowed, null is not.
    password: str | SkipJsonSchema[None] = Field(default=None, json_schema_extra=PASSWORD_SCHEMA)
    role: LenientRole | SkipJsonSchema[None] = None

    _name = field_validator("name")(_clean_name)
    _email = field_validator("email")(_clean_email)
    _password = field_validator("password")(check_password)
    _not_null = field_validator("password", "role", mode="before")(_not_null)


class UserUpdate(InputModel):
    """A partial update: absent fields are kept; ``email: null`` removes the email.

    ``currentPassword`` proves that the caller knows the password, not just a token: it is
    required to change one's own password or email (an admin changing another user's is
    exempt). Only compared, never checked for length rules: a wrong one is simply wrong.
    """

    model_config = ConfigDict(json_schema_extra=PASSWORD_KEEPS_EMAIL)

    name: str | SkipJsonSchema[None] = Field(default=None, json_schema_extra=NAME_SCHEMA)
    email: str | None = Field(default=None, json_schema_extra=EMAIL_SCHEMA)
    password: str | SkipJsonSchema[None] = Field(default=None, json_schema_extra=PASSWORD_SCHEMA)
    role: LenientRole | SkipJsonSchema[None] = None
    # Admins only: false suspends the account (every session ends), true lifts it.
    is_active: bool | SkipJsonSchema[None] = None
    current_password: str | SkipJsonSchema[None] = Field(
        default=None, json_schema_extra=CURRENT_PASSWORD_SCHEMA
    )

    _name = field_validator("name")(_clean_name)
    _email = field_validator("email")(_clean_email)
    _password = field_validator("password")(check_password)
    _not_null = field_validator(
        "name", "password", "role", "is_active", "current_password", mode="before"
    )(_not_null)


class UserDeletion(InputModel):
    """The optional body of ``DELETE /api/users/{id}``.

    ``currentPassword`` is required to delete one's own account (admins included): a token
    alone must not be enough to erase an account. An admin deleting another user needs none.
    """

    current_password: str | SkipJsonSchema[None] = Field(
        default=None, json_schema_extra=CURRENT_PASSWORD_SCHEMA
    )

    _not_null = field_validator("current_password", mode="before")(_not_null)


class UserPublic(WireModel):
    id: UUID
    name: str
    email: str | None
    role: Role
    is_active: bool
    created_at: datetime
    updated_at: datetime

    @field_serializer("created_at", "updated_at")
    def _timestamp(self, value: datetime) -> str:
        return format_timestamp(value)


class TokenRequest(InputModel):
    # Only its length is validated (400 beyond RFC 5321's limits, before any parsing): a
    # malformed email is simply an unknown one (401, not 400).
    email: str = Field(json_schema_extra={"maxLength": EMAIL_MAX_LENGTH})
    password: str

    _email = field_validator("email")(check_email_length)


class RefreshTokenRequest(InputModel):
    # Not validated beyond type: a malformed token is simply an unknown one (401, not 400).
    refresh_token: str


class TokenPublic(WireModel):
    access_token: str
    token_type: str = Field(  # the RFC 6750 scheme name, not a secret
        default="Bearer", json_schema_extra={"enum": ["Bearer"]}
    )
    expires_in: int = Field(
        json_schema_extra={"minimum": 1, "description": "Seconds the access token lasts"}
    )
    refresh_token: str = Field(
        json_schema_extra={
            "description": "Opaque; exchange it once at POST /api/auth/refresh for new tokens"
        }
    )
    refresh_expires_in: int = Field(
        json_schema_extra={"minimum": 1, "description": "Seconds the refresh token lasts"}
    )


class SessionPublic(WireModel):
    """One open session: a login and the refreshes that followed it."""

    id: UUID
    created_at: datetime
    last_used_at: datetime
    expires_at: datetime
    user_agent: str | None
    address: str | None
    current: bool = Field(
        json_schema_extra={"description": "Whether the token of this request belongs to it"}
    )

    @field_serializer("created_at", "last_used_at", "expires_at")
    def _timestamp(self, value: datetime) -> str:
        return format_timestamp(value)


class JwkPublic(WireModel):
    """One public signing key as a JWK (RFC 7517, RFC 8037)."""

    kty: Literal["OKP"]
    crv: Literal["Ed25519"]
    x: str
    kid: str
    alg: Literal["EdDSA"]
    use: Literal["sig"]


class JwksPublic(WireModel):
    """The JWKS document: the current signing key first, then retired ones."""

    keys: list[JwkPublic]
