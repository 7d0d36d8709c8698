"""Request and response shapes of the API keys API (one per direction)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from pydantic import AwareDatetime, Field, field_serializer, field_validator
from pydantic.json_schema import SkipJsonSchema

from api_shared.auth import Role, Scope
from api_shared.representation import InputModel, WireModel, format_timestamp
from users_service.fields import CURRENT_PASSWORD_SCHEMA, NAME_SCHEMA, clean_name, not_null

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

    _name = field_validator("name")(clean_name)
    _scopes = field_validator("scopes")(_known_scopes)
    _expires_at = field_validator("expires_at", mode="before")(_rfc3339_or_null)
    _not_null = not_null("current_password")


class ApiKeysRevocation(InputModel):
    """The optional body of ``DELETE /api/api-keys``: the password, for a login that is not
    recent."""

    current_password: str | SkipJsonSchema[None] = Field(
        default=None, json_schema_extra=RECENT_PASSWORD_SCHEMA
    )

    _not_null = not_null("current_password")


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
