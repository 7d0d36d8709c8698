"""API keys as bearer credentials: their shape, told apart from access tokens by the prefix,
and the port that says whose a key is (users-service knows; docs/api.md#api-keys)."""

from __future__ import annotations

import re
from typing import Protocol

from api_shared.auth.principal import Principal

# ``ak_live_`` and 43 base64url characters (256 random bits). Checked before any lookup, so
# that garbage costs nobody a question to users-service.
API_KEY_PREFIX = "ak_"
API_KEY_PATTERN = re.compile(r"ak_live_[A-Za-z0-9_-]{43}")


def is_api_key(token: str) -> bool:
    """Whether a bearer credential claims to be an API key (it may still be malformed)."""
    return token.startswith(API_KEY_PREFIX)


class ApiKeyResolver(Protocol):
    """Whose an API key is and what it may do, now: users-service knows."""

    async def resolve_api_key(self, key: str) -> Principal:
        """The key's principal (its owner's current role, its scopes); UNAUTHENTICATED for a
        key that is unknown, revoked or expired, FORBIDDEN when its owner is suspended."""
        ...
