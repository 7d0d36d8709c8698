"""Issued access tokens: EdDSA, the current kid, exactly the contract's claims."""

from __future__ import annotations

import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from api_shared.auth import Principal, StaticKeySource, TokenVerifier
from users_service.keys import SigningKeys
from users_service.tokens import TokenIssuer

NOW = 1_800_000_000


def issuer(keys: SigningKeys) -> TokenIssuer:
    return TokenIssuer(
        keys, issuer="users-service", audience="api-platform", ttl_s=900, clock=lambda: NOW + 0.7
    )


def test_a_token_carries_exactly_the_contract_claims() -> None:
    keys = SigningKeys.of(Ed25519PrivateKey.generate())

    token = issuer(keys).issue("user-1", "customer")

    claims = jwt.decode(token.access_token, options={"verify_signature": False})
    jti = claims.pop("jti")
    assert claims == {
        "iss": "users-service",
        "aud": "api-platform",
        "sub": "user-1",
        "role": "customer",
        "iat": NOW,
        "exp": NOW + 900,
    }
    assert isinstance(jti, str)
    assert len(jti) >= 16
    assert token.expires_in == 900


def test_a_token_names_the_current_key_and_algorithm() -> None:
    keys = SigningKeys.of(
        Ed25519PrivateKey.generate(), (Ed25519PrivateKey.generate().public_key(),)
    )

    header = jwt.get_unverified_header(issuer(keys).issue("user-1", "admin").access_token)

    assert (header["alg"], header["kid"]) == ("EdDSA", keys.kid)


def test_tokens_never_share_a_jti() -> None:
    token_issuer = issuer(SigningKeys.of(Ed25519PrivateKey.generate()))

    jtis = {
        jwt.decode(
            token_issuer.issue("u", "customer").access_token, options={"verify_signature": False}
        )["jti"]
        for _ in range(5)
    }

    assert len(jtis) == 5


async def test_the_shared_verifier_accepts_a_fresh_token() -> None:
    keys = SigningKeys.of(Ed25519PrivateKey.generate())
    token_issuer = TokenIssuer(keys, issuer="users-service", audience="api-platform", ttl_s=900)
    verifier = TokenVerifier(
        StaticKeySource(keys.public_keys), issuer="users-service", audience="api-platform"
    )

    principal = await verifier.verify(token_issuer.issue("user-1", "admin").access_token)

    assert principal == Principal("user-1", "admin")
