"""Access tokens: EdDSA-signed JWTs that the gateway and every service verify.

Their claims and lifetime are docs/api.md#authentication.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

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

    def issue(self, subject: str, role: str) -> IssuedToken:
        now = int(self.clock())
        claims = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": subject,
            "role": role,
            "iat": now,
            "exp": now + self.ttl_s,
            "jti": uuid.uuid4().hex,
        }
        token = jwt.encode(
            claims, self.keys.private_key, algorithm=ALGORITHM, headers={"kid": self.keys.kid}
        )
        return IssuedToken(access_token=token, expires_in=self.ttl_s)
