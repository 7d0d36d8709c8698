"""Request and response shapes of the users API (one per direction)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from pydantic import ConfigDict, Field, field_serializer, field_validator
from pydantic.json_schema import SkipJsonSchema

from api_shared.auth import Role
from api_shared.representation import InputModel, WireModel, format_timestamp
from users_service.emails import EMAIL_MAX_LENGTH, normalize_email
from users_service.fields import (
    CURRENT_PASSWORD_SCHEMA,
    EMAIL_SCHEMA,
    NAME_SCHEMA,
    PASSWORD_SCHEMA,
    clean_name,
    not_null,
)
from users_service.passwords import check_password

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

# strict=False: the JSON string "admin" becomes Role.ADMIN.
LenientRole = Annotated[Role, Field(strict=False)]


def _clean_email(value: str | None) -> str | None:
    return None if value is None else normalize_email(value)


class UserCreate(InputModel):
    model_config = ConfigDict(json_schema_extra=PASSWORD_NEEDS_EMAIL)

    name: str = Field(json_schema_extra=NAME_SCHEMA)
    email: str | None = Field(default=None, json_schema_extra=EMAIL_SCHEMA)
    # SkipJsonSchema: absent is allowed, null is not.
    password: str | SkipJsonSchema[None] = Field(default=None, json_schema_extra=PASSWORD_SCHEMA)
    role: LenientRole | SkipJsonSchema[None] = None

    _name = field_validator("name")(clean_name)
    _email = field_validator("email")(_clean_email)
    _password = field_validator("password")(check_password)
    _not_null = not_null("password", "role")


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

    _name = field_validator("name")(clean_name)
    _email = field_validator("email")(_clean_email)
    _password = field_validator("password")(check_password)
    _not_null = not_null("name", "password", "role", "is_active", "current_password")


class UserDeletion(InputModel):
    """The optional body of ``DELETE /api/users/{id}``.

    ``currentPassword`` is required to delete one's own account (admins included): a token
    alone must not be enough to erase an account. An admin deleting another user needs none.
    """

    current_password: str | SkipJsonSchema[None] = Field(
        default=None, json_schema_extra=CURRENT_PASSWORD_SCHEMA
    )

    _not_null = not_null("current_password")


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
