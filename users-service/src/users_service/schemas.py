"""Request and response shapes of the users, token and API key APIs (one per direction)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    AwareDatetime,
    ConfigDict,
    Field,
    RootModel,
    field_serializer,
    field_validator,
)
from pydantic.json_schema import SkipJsonSchema

from api_shared.auth import Role, Scope
from api_shared.representation import InputModel, WireModel, format_timestamp
from api_shared.text import SAFE_TEXT_PATTERN, check_safe_text
from users_service.emails import (
    EMAIL_MAX_LENGTH,
    NOT_SPECIAL_USE_PATTERN,
    check_email_length,
    normalize_email,
)
from users_service.passwords import PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, check_password

NAME_MAX_LENGTH = 100
# A mailed token is 43 characters (256 bits, URL-safe base64); longer input is no token.
ACCOUNT_TOKEN_MAX_LENGTH = 128
# A refresh token is 76 (api_shared.refresh_tokens); a longer one is simply unknown (401).
REFRESH_TOKEN_SCHEMA: dict[str, Any] = {"maxLength": 128}

# What the validators below check, for the API documentation (they stay the source of truth).
NAME_SCHEMA: dict[str, Any] = {
    "minLength": 1,
    "maxLength": NAME_MAX_LENGTH,
    # None of api_shared.text's characters, and not only whitespace.
    "pattern": SAFE_TEXT_PATTERN,
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
_EMAIL_PRESENT: dict[str, Any] = {
    "properties": {"email": {"type": "string", "maxLength": EMAIL_MAX_LENGTH}}
}
PASSWORD_NEEDS_EMAIL: dict[str, Any] = {
    "dependentSchemas": {"password": {"required": ["email"], **_EMAIL_PRESENT}}
}
PASSWORD_KEEPS_EMAIL: dict[str, Any] = {"dependentSchemas": {"password": _EMAIL_PRESENT}}
CURRENT_PASSWORD_SCHEMA: dict[str, Any] = {
    "description": "The caller's password: required with `password` or `email` when "
    "changing one's own user (not when an admin changes another user)",
    # No password is longer; a longer one is simply wrong (compared, not validated).
    "maxLength": PASSWORD_MAX_LENGTH,
}

# strict=False: the JSON string "admin" becomes Role.ADMIN.
LenientRole = Annotated[Role, Field(strict=False)]


def _clean_name(value: str) -> str:
    # Anywhere, ends included: a name is pasted into pages and messages (api_shared.text).
    value = check_safe_text(value).strip()
    if not 1 <= len(value) <= NAME_MAX_LENGTH:
        raise ValueError(f"must be 1 to {NAME_MAX_LENGTH} characters")
    return value


def _clean_email(value: str | None) -> str | None:
    return None if value is None else normalize_email(value)


def _token_length(value: str) -> str:
    if len(value) > ACCOUNT_TOKEN_MAX_LENGTH:
        raise ValueError(f"must be at most {ACCOUNT_TOKEN_MAX_LENGTH} characters")
    return value


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
    # Last: a field added to a published event's schema goes after the others.
    email_verified: bool = Field(
        json_schema_extra={
            "description": "Whether the owner of `email` proved it (a verification link, or "
            "a password reset sent there); false again when the email changes"
        }
    )

    @field_serializer("created_at", "updated_at")
    def _timestamp(self, value: datetime) -> str:
        return format_timestamp(value)


class TokenRequest(InputModel):
    """The password grant of ``POST /api/auth/token`` (a login): ``grantType`` may be left out.

    Only the email's length is validated (400 beyond RFC 5321's limits, before any parsing):
    a malformed email is simply an unknown one (401, not 400).
    """

    grant_type: Literal["password"] | SkipJsonSchema[None] = None
    email: str = Field(json_schema_extra={"maxLength": EMAIL_MAX_LENGTH})
    # No password is longer; a longer one is simply wrong (401, like any wrong password).
    password: str = Field(json_schema_extra={"maxLength": PASSWORD_MAX_LENGTH})

    _email = field_validator("email")(check_email_length)
    _not_null = field_validator("grant_type", mode="before")(_not_null)


class RefreshTokenRequest(InputModel):
    """The body of the deprecated ``POST /api/auth/refresh`` and ``POST /api/auth/logout``."""

    # Not validated beyond type: a malformed token is simply an unknown one (401, not 400).
    refresh_token: str = Field(json_schema_extra=REFRESH_TOKEN_SCHEMA)


class RefreshGrant(InputModel):
    """The refresh grant of ``POST /api/auth/token`` (OAuth 2's, RFC 6749 §6)."""

    grant_type: Literal["refresh_token"]
    # Not validated beyond type: a malformed token is simply an unknown one (401, not 400).
    refresh_token: str = Field(json_schema_extra=REFRESH_TOKEN_SCHEMA)


REFRESH_GRANT = "refresh_token"


class TokenGrant(RootModel[TokenRequest | RefreshGrant]):
    """What ``POST /api/auth/token`` takes: a login, or a refresh token to exchange."""


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
            "description": "Opaque; exchange it once for new tokens at POST /api/auth/token "
            "(grantType refresh_token)"
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


class EmailVerificationCreate(InputModel):
    """``POST /api/email-verifications``: the token of a verification message."""

    # Not validated beyond type and length: a malformed token is simply an invalid one.
    token: str = Field(json_schema_extra={"maxLength": ACCOUNT_TOKEN_MAX_LENGTH})

    _token = field_validator("token")(_token_length)


class PasswordResetRequestCreate(InputModel):
    """``POST /api/password-reset-requests``: the address to mail a reset link to."""

    email: str = Field(json_schema_extra=EMAIL_SCHEMA)

    _email = field_validator("email")(normalize_email)


class PasswordResetCreate(InputModel):
    """``POST /api/password-resets``: a reset message's token and the new password."""

    token: str = Field(json_schema_extra={"maxLength": ACCOUNT_TOKEN_MAX_LENGTH})
    password: str = Field(json_schema_extra=PASSWORD_SCHEMA)

    _token = field_validator("token")(_token_length)
    _password = field_validator("password")(check_password)


SCOPES = tuple(scope.value for scope in Scope)
# RFC 3339's date-time (§5.6): a date, a time and an offset, nothing looser; to the
# nanosecond at most, so the text is bounded (35 characters).
_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
TIMESTAMP_MAX_LENGTH = len("2027-01-31T12:00:00.123456789+00:00")


# strict=False: parsed from the RFC 3339 text that _rfc3339 let through.
LenientTimestamp = Annotated[
    AwareDatetime, Field(strict=False, json_schema_extra={"maxLength": TIMESTAMP_MAX_LENGTH})
]


def _known_scopes(value: list[str]) -> list[str]:
    """The scopes, sorted, when each is one of ``Scope`` and none is repeated."""
    if not value:
        raise ValueError("must name at least one scope")
    unknown = sorted(set(value) - set(SCOPES))
    if unknown:
        raise ValueError(f"unknown scope {unknown[0]!r}; known: {', '.join(SCOPES)}")
    if len(set(value)) != len(value):
        raise ValueError("must not repeat a scope")
    return sorted(value)


def _rfc3339(value: object) -> object:
    # Before pydantic's own parsing, which also takes numbers and dates without an offset.
    if not isinstance(value, str) or not _RFC3339.fullmatch(value):
        raise ValueError("must be an RFC 3339 timestamp with an offset, like 2027-01-31T12:00:00Z")
    return value


def _rfc3339_or_null(value: object) -> object:
    return None if value is None else _rfc3339(value)


EXPIRES_AT_DESCRIPTION = (
    "In the future, within API_KEY_MAX_LIFETIME_S (a year) and, for a key made by a key, "
    "within that key's own expiry. Absent: the latest of those; null: never, only where "
    "API_KEY_NO_EXPIRY_FOR allows it"
)
RECENT_PASSWORD_SCHEMA: dict[str, Any] = {
    **CURRENT_PASSWORD_SCHEMA,
    "description": "The caller's password: required when the login is older than "
    "RECENT_AUTHENTICATION_S (403 REAUTHENTICATION_REQUIRED without it); never from an API key",
}


class ApiKeyCreate(InputModel):
    """``POST /api/api-keys``: a name to recognise the key by, its scopes, and an expiry
    (absent: the longest allowed; null: never, where the policy allows it), and for a login
    that is not recent, the password (docs/api.md#api-keys)."""

    name: str = Field(json_schema_extra=NAME_SCHEMA)
    scopes: list[str] = Field(
        json_schema_extra={
            "minItems": 1,
            "maxItems": len(SCOPES),  # each at most once
            "uniqueItems": True,
            "items": {"type": "string", "enum": list(SCOPES)},
        }
    )
    expires_at: LenientTimestamp | None = Field(
        default=None, json_schema_extra={"description": EXPIRES_AT_DESCRIPTION}
    )
    current_password: str | SkipJsonSchema[None] = Field(
        default=None, json_schema_extra=RECENT_PASSWORD_SCHEMA
    )

    _name = field_validator("name")(_clean_name)
    _scopes = field_validator("scopes")(_known_scopes)
    _expires_at = field_validator("expires_at", mode="before")(_rfc3339_or_null)
    _not_null = field_validator("current_password", mode="before")(_not_null)


class ApiKeysRevocation(InputModel):
    """The optional body of ``DELETE /api/api-keys``: the password, for a login that is not
    recent."""

    current_password: str | SkipJsonSchema[None] = Field(
        default=None, json_schema_extra=RECENT_PASSWORD_SCHEMA
    )

    _not_null = field_validator("current_password", mode="before")(_not_null)


class ApiKeyOwner(WireModel):
    """The user a key acts for, with their role now (which bounds what the scopes allow)."""

    id: UUID
    role: Role


class ApiKeyPublic(WireModel):
    """An API key as it is shown: never its secret, nor its hash."""

    id: UUID
    name: str
    prefix: str = Field(
        json_schema_extra={"description": "The key's first 12 characters, to recognise it by"}
    )
    scopes: list[str] = Field(json_schema_extra={"items": {"type": "string", "enum": list(SCOPES)}})
    owner: ApiKeyOwner
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None = Field(
        json_schema_extra={"description": "When the key was last used, to the minute"}
    )

    @field_serializer("created_at", "expires_at", "last_used_at")
    def _timestamp(self, value: datetime | None) -> str | None:
        return None if value is None else format_timestamp(value)


class ApiKeyWithSecret(ApiKeyPublic):
    """A new API key: its document and, in this one answer only, the key itself."""

    secret: str = Field(
        json_schema_extra={
            "description": "The key (ak_live_ and 43 base64url characters): send it as "
            "`Authorization: Bearer <secret>`. Shown once, never again",
            "pattern": "^ak_live_[A-Za-z0-9_-]{43}$",
        }
    )
