"""Access tokens: EdDSA-signed JWTs that the gateway and every service verify; and refresh
tokens (laid out in ``api_shared.refresh_tokens``), stored only as their SHA-256.

Their claims and lifetimes are docs/api.md#authentication.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import jwt

from api_shared.auth import ALGORITHM
from api_shared.refresh_tokens import new_refresh_token, refresh_token_session
from users_service.sessions.keys import SigningKeys

__all__ = [
    "IssuedToken",
    "TokenIssuer",
    "new_refresh_token",
    "refresh_token_hash",
    "refresh_token_session",
]


@dataclass(frozen=True, slots=True)
class IssuedToken:
    access_token: str
    expires_in: int


class TokenIssuer:
    """Signs access tokens with the current key; ``kid`` tells verifiers which key that is."""

    def __init__(
        self,
        keys: SigningKeys,
        *,
        issuer: str,
        audience: str,
        ttl_s: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.ttl_s = ttl_s
        self.clock = clock

    def issue(self, subject: str, role: str, session_id: UUID, auth_time: datetime) -> IssuedToken:
        """An access token of ``subject`` within the session ``session_id`` (claim ``sid``),
        whose person logged in at ``auth_time`` (claim ``auth_time``, OIDC's: what needs a
        recent login reads it)."""
        now = int(self.clock())
        claims = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": subject,
            "role": role,
            "sid": str(session_id),
            "auth_time": int(auth_time.timestamp()),
            "iat": now,
            "exp": now + self.ttl_s,
            "jti": uuid.uuid4().hex,
        }
        token = jwt.encode(
            claims, self.keys.private_key, algorithm=ALGORITHM, headers={"kid": self.keys.kid}
        )
        return IssuedToken(access_token=token, expires_in=self.ttl_s)


def refresh_token_hash(token: str) -> str:
    """What is stored of a refresh token: its SHA-256 (the token has 256 bits of entropy, so a
    fast hash is enough: there is nothing to guess that a slow one would protect)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
