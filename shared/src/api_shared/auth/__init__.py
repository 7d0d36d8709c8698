"""Bearer credentials, checked the same way by the gateway and every service
(docs/api.md#authentication), in five parts:

- ``principal``: who is calling (``Principal``), the roles and scopes, the checks on them;
- ``keys`` and ``verifier``: access tokens (EdDSA JWTs) verified by users-service's
  published keys (its JWKS), verdicts cached until the token expires or its key goes;
- ``api_keys``: an API key's shape, and the port that says whose it is (users-service);
- ``request``: the caller of a request (``authenticate``), from its ``Authorization`` header;
- ``access``: what a route asks of its caller (``Access``: an API key's scope, a person's
  login), declared per route, and the caller it admits (``caller``).

The names callers use are re-exported here, so ``from api_shared.auth import ...`` reads as
one vocabulary.
"""

from __future__ import annotations

from api_shared.auth.access import Access, caller
from api_shared.auth.api_keys import API_KEY_PATTERN, API_KEY_PREFIX, ApiKeyResolver, is_api_key
from api_shared.auth.keys import (
    ALGORITHM,
    DEFAULT_REFRESH_INTERVAL_S,
    JwksKeySource,
    KeySource,
    StaticKeySource,
    public_keys_from_jwks,
)
from api_shared.auth.principal import (
    MissingScopeError,
    Principal,
    Role,
    Scope,
    require_person,
    require_scope,
)
from api_shared.auth.request import Authenticating, authenticate, bearer_token, optional_principal
from api_shared.auth.verifier import MAX_LEEWAY_S, MAX_TOKEN_BYTES, TokenVerifier, jwks_verifier

__all__ = [
    "ALGORITHM",
    "API_KEY_PATTERN",
    "API_KEY_PREFIX",
    "DEFAULT_REFRESH_INTERVAL_S",
    "MAX_LEEWAY_S",
    "MAX_TOKEN_BYTES",
    "Access",
    "ApiKeyResolver",
    "Authenticating",
    "JwksKeySource",
    "KeySource",
    "MissingScopeError",
    "Principal",
    "Role",
    "Scope",
    "StaticKeySource",
    "TokenVerifier",
    "authenticate",
    "bearer_token",
    "caller",
    "is_api_key",
    "jwks_verifier",
    "optional_principal",
    "public_keys_from_jwks",
    "require_person",
    "require_scope",
]
