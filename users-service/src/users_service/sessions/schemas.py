"""Request and response shapes of the token, session and JWKS APIs (one per direction)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import Field, RootModel, field_serializer, field_validator
from pydantic.json_schema import SkipJsonSchema

from api_shared.representation import InputModel, WireModel, format_timestamp
from users_service.emails import EMAIL_MAX_LENGTH, check_email_length
from users_service.fields import not_null
from users_service.passwords import PASSWORD_MAX_LENGTH

# A refresh token is 76 (api_shared.refresh_tokens); a longer one is simply unknown (401).
REFRESH_TOKEN_SCHEMA: dict[str, Any] = {"maxLength": 128}


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
    _not_null = not_null("grant_type")


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
