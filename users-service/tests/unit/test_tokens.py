"""Issued access tokens: EdDSA, the current kid, exactly the contract's claims."""

from __future__ import annotations

import base64
import hashlib
import uuid
from datetime import UTC, datetime

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from api_shared.auth import Principal, StaticKeySource, TokenVerifier
from users_service.sessions.keys import SigningKeys
from users_service.sessions.tokens import (
    TokenIssuer,
    new_refresh_token,
    refresh_token_hash,
    refresh_token_session,
)

NOW = 1_800_000_000
SESSION = uuid.uuid4()
LOGGED_IN = datetime.fromtimestamp(NOW - 600.4, UTC)  # the session's login, 10 minutes before


def issuer(keys: SigningKeys) -> TokenIssuer:
    return TokenIssuer(
        keys, issuer="users-service", audience="api-platform", ttl_s=900, clock=lambda: NOW + 0.7
    )


def test_a_token_carries_exactly_the_contract_claims() -> None:
    keys = SigningKeys.of(Ed25519PrivateKey.generate())

    token = issuer(keys).issue("user-1", "customer", SESSION, LOGGED_IN)

    claims = jwt.decode(token.access_token, options={"verify_signature": False})
    jti = claims.pop("jti")
    assert claims == {
        "iss": "users-service",
        "aud": "api-platform",
        "sub": "user-1",
        "role": "customer",
        "sid": str(SESSION),
        "auth_time": NOW - 601,  # the login's second (OIDC's claim, an integer)
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

    header = jwt.get_unverified_header(
        issuer(keys).issue("user-1", "admin", SESSION, LOGGED_IN).access_token
    )

    assert (header["alg"], header["kid"]) == ("EdDSA", keys.kid)


def test_tokens_never_share_a_jti() -> None:
    token_issuer = issuer(SigningKeys.of(Ed25519PrivateKey.generate()))

    jtis = {
        jwt.decode(
            token_issuer.issue("u", "customer", SESSION, LOGGED_IN).access_token,
            options={"verify_signature": False},
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

    principal = await verifier.verify(
        token_issuer.issue("user-1", "admin", SESSION, LOGGED_IN).access_token
    )

    assert principal == Principal("user-1", "admin", str(SESSION))
    assert principal.auth_time == LOGGED_IN.timestamp() // 1


def test_a_refresh_token_has_256_random_bits_names_its_session_and_is_stored_hashed() -> None:
    session = uuid.uuid4()

    tokens = {new_refresh_token(session) for _ in range(5)}

    assert len(tokens) == 5
    for token in tokens:
        prefix, secret = token.split(".")
        assert prefix == session.hex
        assert len(base64.urlsafe_b64decode(secret + "=")) == 32
        assert refresh_token_session(token) == session
        stored = refresh_token_hash(token)
        assert stored == hashlib.sha256(token.encode()).hexdigest()
        assert secret not in stored


@pytest.mark.parametrize(
    "token",
    ["", "abc", "0" * 32, f"{'0' * 32}.", f"{'g' * 32}.{'a' * 43}", f"{'0' * 32}.{'a' * 42}"],
)
def test_a_malformed_refresh_token_names_no_session(token: str) -> None:
    assert refresh_token_session(token) is None
