"""Real tokens for tests: an Ed25519 key pair that signs them, and its JWKS."""

from __future__ import annotations

import base64
import json
import time
import uuid
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from jwt.algorithms import OKPAlgorithm

from api_shared.auth.keys import StaticKeySource
from api_shared.auth.verifier import TokenVerifier


class TestSigner:
    """A real Ed25519 key pair that signs real tokens, for tests of every service.

    ``verifier()`` trusts exactly this key, as a service configured with its JWKS would. Given
    a running users-service's own key and ``kid``, it signs tokens that users-service could
    have issued, with claims it never would (a test of what a verifier makes of them).
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        *,
        issuer: str = "users-service",
        audience: str = "api-platform",
        private_key: Ed25519PrivateKey | None = None,
        kid: str | None = None,
    ) -> None:

        self.issuer = issuer
        self.audience = audience
        self.private_key = private_key or Ed25519PrivateKey.generate()
        self.kid = kid or f"test-{uuid.uuid4().hex[:8]}"

    def token(self, subject: str, role: str = "customer", **overrides: object) -> str:
        """A signed token for ``subject``; ``overrides`` replace or (with None) drop claims."""

        now = int(time.time())
        claims: dict[str, object] = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": subject,
            "role": role,
            "iat": now,
            "exp": now + 900,
            "jti": uuid.uuid4().hex,
        }
        claims.update(overrides)
        claims = {name: value for name, value in claims.items() if value is not None}
        return jwt.encode(claims, self.private_key, algorithm="EdDSA", headers={"kid": self.kid})

    def jwks(self) -> dict[str, list[dict[str, Any]]]:
        """The public half, as users-service publishes it."""

        jwk = json.loads(OKPAlgorithm.to_jwk(self.private_key.public_key()))
        return {"keys": [{**jwk, "kid": self.kid, "alg": "EdDSA", "use": "sig"}]}

    def verifier(self) -> TokenVerifier:

        return TokenVerifier(
            StaticKeySource({self.kid: self.private_key.public_key()}),
            issuer=self.issuer,
            audience=self.audience,
        )


def unverified_claims(token: str) -> dict[str, object]:
    """The claims a token carries, read without checking its signature (what a client sees)."""
    payload = token.split(".")[1]
    claims: dict[str, object] = json.loads(
        base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    )
    return claims
