"""Who is calling and what they may do: the roles, an API key's scopes, and the checks a
route makes on the caller (docs/api.md#authentication, docs/api.md#api-keys)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from api_shared.errors import ForbiddenError


# The roles a token's ``role`` claim names: users-service issues and stores them (Tortoise's
# CharEnumField), every verifier reads them. A comment, not a docstring: pydantic would
# publish a docstring as the schema's description in users-service's OpenAPI document.
class Role(StrEnum):
    CUSTOMER = "customer"
    ADMIN = "admin"


# The scopes an API key may be given (docs/api.md#api-keys): the contract's vocabulary, like
# Role. users-service decides who may grant which; each service decides which one a route
# needs. A key's scopes only narrow what its owner's role allows, never widen it.
class Scope(StrEnum):
    USERS_READ = "users:read"
    USERS_WRITE = "users:write"
    ORDERS_READ = "orders:read"
    ORDERS_WRITE = "orders:write"
    WEBHOOKS_MANAGE = "webhooks:manage"
    EVENTS_READ = "events:read"
    API_KEYS_READ = "api-keys:read"
    API_KEYS_WRITE = "api-keys:write"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling, as the verified token (or users-service, for an API key) says."""

    subject: str
    role: str
    # The session (refresh-token family) the token was issued for; users-service checks that
    # it is still open. Other services do not: access tokens stay stateless for them.
    session_id: str | None = None
    # For an API key: its id and its scopes. None for an access token, which is a person's
    # login and may do whatever the account may.
    api_key_id: str | None = None
    scopes: frozenset[str] | None = None
    # When an access token stops being valid (its ``exp``, Unix seconds): a long-lived
    # response such as an event stream ends then. None for an API key, which has no ``exp``.
    # Not part of who the caller is: two tokens of one login compare equal.
    expires_at: float | None = field(default=None, compare=False)
    # When the person behind an access token last proved who they are (its ``auth_time``,
    # OIDC's claim, Unix seconds): their login, kept through every refresh of its session.
    # What needs a recent login (minting an API key) reads it. None for an API key, and for
    # a token issued without the claim.
    auth_time: float | None = field(default=None, compare=False)

    @property
    def is_admin(self) -> bool:
        return self.role == Role.ADMIN

    @property
    def is_api_key(self) -> bool:
        return self.api_key_id is not None

    def allows(self, scope: str) -> bool:
        """Whether the credential covers ``scope`` (an access token covers every scope)."""
        return self.scopes is None or scope in self.scopes


class MissingScopeError(ForbiddenError):
    """403 for an API key without the scope a route needs, named in the message and in the
    ``WWW-Authenticate`` challenge (RFC 6750 §3.1, ``insufficient_scope``)."""

    def __init__(self, scope: str) -> None:
        super().__init__(
            f"This API key lacks the scope '{scope}'.",
            headers={"WWW-Authenticate": f'Bearer error="insufficient_scope", scope="{scope}"'},
        )
        self.scope = scope


def require_scope(principal: Principal, scope: str) -> Principal:
    """``principal`` when its credential covers ``scope``; MissingScopeError otherwise."""
    if not principal.allows(scope):
        raise MissingScopeError(scope)
    return principal


def require_person(principal: Principal, message: str) -> Principal:
    """``principal`` when it is a person's login, not an API key: for what a key never does
    (sessions, credentials, whatever needs a password). 403 FORBIDDEN with ``message``."""
    if principal.is_api_key:
        raise ForbiddenError(message)
    return principal
