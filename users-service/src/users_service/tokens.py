"""Access tokens: EdDSA-signed JWTs that the gateway and every service verify (CONTRACT §4);
and refresh tokens: opaque, random, and stored only as their SHA-256."""

from __future__ import annotations

import hashlib
import re
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

import jwt

from api_shared.auth import ALGORITHM
from users_service.keys import SigningKeys


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

    def issue(self, subject: str, role: str, session_id: UUID) -> IssuedToken:
        """An access token of ``subject`` within the session ``session_id`` (claim ``sid``)."""
        now = int(self.clock())
        claims = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": subject,
            "role": role,
            "sid": str(session_id),
            "iat": now,
            "exp": now + self.ttl_s,
            "jti": uuid.uuid4().hex,
        }
        token = jwt.encode(
            claims, self.keys.private_key, algorithm=ALGORITHM, headers={"kid": self.keys.kid}
        )
        return IssuedToken(access_token=token, expires_in=self.ttl_s)


REFRESH_SECRET_BYTES = 32  # 256 bits from the OS's CSPRNG
# <session id, 32 hex digits>.<secret, unpadded base64url>: the prefix lets the gateway keep a
# rate limit per session without any state; a made-up prefix matches no stored hash.
_REFRESH_TOKEN = re.compile(r"([0-9a-f]{32})\.([A-Za-z0-9_-]{43})")


def new_refresh_token(session_id: UUID) -> str:
    return f"{session_id.hex}.{secrets.token_urlsafe(REFRESH_SECRET_BYTES)}"


def refresh_token_hash(token: str) -> str:
    """What is stored of a refresh token: its SHA-256 (the token has 256 bits of entropy, so a
    fast hash is enough: there is nothing to guess that a slow one would protect)."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def refresh_token_session(token: str) -> UUID | None:
    """The session a well-formed refresh token names; None for anything else."""
    match = _REFRESH_TOKEN.fullmatch(token)
    return UUID(hex=match.group(1)) if match else None
