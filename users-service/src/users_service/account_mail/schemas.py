"""Request shapes of the email verification and password reset API."""

from __future__ import annotations

from pydantic import Field, field_validator

from api_shared.representation import InputModel
from users_service.emails import normalize_email
from users_service.fields import EMAIL_SCHEMA, PASSWORD_SCHEMA
from users_service.passwords import check_password

# A mailed token is 43 characters (256 bits, URL-safe base64); longer input is no token.
ACCOUNT_TOKEN_MAX_LENGTH = 128


def _token_length(value: str) -> str:
    if len(value) > ACCOUNT_TOKEN_MAX_LENGTH:
        raise ValueError(f"must be at most {ACCOUNT_TOKEN_MAX_LENGTH} characters")
    return value


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
