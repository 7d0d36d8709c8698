"""The layout of refresh tokens, which users-service issues and the gateway rate-limits.

``<session id: 32 hex digits>.<secret: 32 random bytes, unpadded base64url>``. The token is
opaque to clients; the session id in front lets the gateway keep a rate limit per session
without any state of its own. Nothing trusts the prefix: users-service looks tokens up by
their hash within the session they name, so a made-up prefix matches nothing.
"""

from __future__ import annotations

import re
import secrets
from uuid import UUID

REFRESH_SECRET_BYTES = 32  # 256 bits from the operating system's CSPRNG
MAX_REFRESH_TOKEN_LENGTH = 32 + 1 + 43
_REFRESH_TOKEN = re.compile(r"([0-9a-f]{32})\.[A-Za-z0-9_-]{43}")


def new_refresh_token(session_id: UUID) -> str:
    return f"{session_id.hex}.{secrets.token_urlsafe(REFRESH_SECRET_BYTES)}"


def refresh_token_session(token: str) -> UUID | None:
    """The session a well-formed refresh token names; None for anything else."""
    if len(token) != MAX_REFRESH_TOKEN_LENGTH:
        return None
    match = _REFRESH_TOKEN.fullmatch(token)
    return UUID(hex=match.group(1)) if match else None
