"""Token issuing, the JWKS, token checks on every protected route, and the start-up admin."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any

import httpx
import jwt
import pytest
from argon2 import PasswordHasher
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from api_shared.auth import Role, StaticKeySource, TokenVerifier, public_keys_from_jwks
from api_shared.ratelimit import Limiter, MemoryBuckets
from api_testkit.tokens import TestSigner
from users_service.budgets import Throttle
from users_service.models import User
from users_service.passwords import Passwords
from users_service.sessions.keys import SigningKeys
from users_service.sessions.repository import SessionRepository
from users_service.sessions.services import SessionService
from users_service.sessions.tokens import TokenIssuer
from users_service.settings import Settings
from users_service.users.repository import UserRepository
from users_service.users.services import AdminEmailTakenError, UserService

NewAccount = Any  # the conftest fixture: async (role=..., name=...) -> Account
Account = Any
ServiceKeys = Any


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_logging_in_returns_a_bearer_token_that_is_never_cached(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()

    response = await client.post(
        "/api/auth/token", json={"email": me.email.upper(), "password": me.password}
    )

    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-store"
    data = response.json()["data"]
    assert set(data) == {
        "accessToken",
        "tokenType",
        "expiresIn",
        "refreshToken",
        "refreshExpiresIn",
    }
    assert (data["tokenType"], data["expiresIn"]) == ("Bearer", 900)


async def test_the_token_is_an_eddsa_jwt_with_the_contract_claims_and_a_published_kid(
    client: httpx.AsyncClient, settings: Settings, new_account: NewAccount
) -> None:
    me = await new_account()
    jwks = (await client.get("/.well-known/jwks.json")).json()

    header = jwt.get_unverified_header(me.token)
    verifier = TokenVerifier(
        StaticKeySource(public_keys_from_jwks(jwks)),
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
    )
    principal = await verifier.verify(me.token)
    claims = jwt.decode(me.token, options={"verify_signature": False})

    assert header["alg"] == "EdDSA"
    assert header["kid"] == jwks["keys"][0]["kid"]
    assert (principal.subject, principal.role) == (me.id, "customer")
    assert set(claims) == {"iss", "aud", "sub", "role", "sid", "auth_time", "iat", "exp", "jti"}
    assert claims["exp"] - claims["iat"] == 900
    assert claims["auth_time"] <= claims["iat"]  # the login's time (OIDC's claim)
    assert principal.auth_time == claims["auth_time"]


async def test_each_token_has_its_own_jti(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    body = {"email": me.email, "password": me.password}

    tokens = [(await client.post("/api/auth/token", json=body)).json() for _ in range(2)]

    jtis = {
        jwt.decode(t["data"]["accessToken"], options={"verify_signature": False})["jti"]
        for t in tokens
    }
    assert len(jtis) == 2


async def test_a_wrong_password_and_an_unknown_email_get_the_same_401(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    attempts = [
        {"email": me.email, "password": "wrong-password"},
        {"email": f"nobody-{uuid.uuid4().hex[:6]}@example.com", "password": me.password},
        {"email": "not an email", "password": me.password},
        {"email": me.email, "password": "x" * 10_000},
    ]

    responses = [await client.post("/api/auth/token", json=body) for body in attempts]

    for response in responses:
        assert response.status_code == 401
        assert response.json() == responses[0].json()
    assert responses[0].json()["error"]["code"] == "INVALID_CREDENTIALS"


async def test_a_user_without_a_password_cannot_log_in(client: httpx.AsyncClient) -> None:
    email = f"nopass-{uuid.uuid4().hex[:6]}@example.com"
    await client.post("/api/users", json={"name": "No Password", "email": email})

    response = await client.post("/api/auth/token", json={"email": email, "password": "anything1"})

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "INVALID_CREDENTIALS"


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"email": "a@example.com"}, {"password": "is required"}),
        ({"password": "secret-123"}, {"email": "is required"}),
        ({"email": "a@example.com", "password": 12345678}, {"password": "must be a string"}),
        (
            {"email": "a@example.com", "password": "p", "remember": True},
            {"remember": "is not allowed"},
        ),
    ],
)
async def test_an_incomplete_login_is_400_naming_the_field(
    client: httpx.AsyncClient, body: dict[str, Any], fields: dict[str, str]
) -> None:
    response = await client.post("/api/auth/token", json=body)

    assert response.status_code == 400
    assert response.json()["error"]["fields"] == fields


async def test_the_jwks_publishes_the_current_and_the_retired_public_keys_only(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/.well-known/jwks.json")

    assert response.status_code == 200
    assert "max-age" in response.headers["cache-control"]
    keys = response.json()["keys"]
    assert len(keys) == 2
    for key in keys:
        assert set(key) == {"kty", "crv", "x", "kid", "alg", "use"}
        assert (key["kty"], key["crv"], key["alg"], key["use"]) == (
            "OKP",
            "Ed25519",
            "EdDSA",
            "sig",
        )


async def test_a_token_signed_by_the_retired_key_is_still_accepted(
    client: httpx.AsyncClient, settings: Settings, service_keys: ServiceKeys, admin: Account
) -> None:
    jwks = (await client.get("/.well-known/jwks.json")).json()
    retired_kid = jwks["keys"][1]["kid"]
    sid = jwt.decode(admin.token, options={"verify_signature": False})["sid"]
    token = _sign(service_keys.retired, retired_kid, settings, sub=admin.id, role="admin", sid=sid)

    response = await client.get(f"/api/users/{admin.id}", headers=bearer(token))

    assert response.status_code == 200


@pytest.mark.parametrize(
    "case",
    ["expired", "wrong-audience", "wrong-issuer", "foreign-key", "alg-none", "tampered", "garbage"],
)
async def test_a_bad_token_sent_straight_to_the_service_is_401_invalid_token(
    client: httpx.AsyncClient,
    settings: Settings,
    service_keys: ServiceKeys,
    new_account: NewAccount,
    case: str,
) -> None:
    me = await new_account()
    kid = jwt.get_unverified_header(me.token)["kid"]
    now = int(time.time())
    key = service_keys.current
    token = {
        "expired": lambda: _sign(key, kid, settings, sub=me.id, iat=now - 999, exp=now - 60),
        "wrong-audience": lambda: _sign(key, kid, settings, sub=me.id, aud="elsewhere"),
        "wrong-issuer": lambda: _sign(key, kid, settings, sub=me.id, iss="impostor"),
        "foreign-key": lambda: _sign(Ed25519PrivateKey.generate(), kid, settings, sub=me.id),
        "alg-none": lambda: jwt.encode(
            {"sub": me.id, "role": "admin"}, "", algorithm="none", headers={"kid": kid}
        ),
        "tampered": lambda: me.token[:-4] + ("AAAA" if not me.token.endswith("AAAA") else "BBBB"),
        "garbage": lambda: "not-a-jwt",
    }[case]()

    response = await client.get(f"/api/users/{me.id}", headers=bearer(token))

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHENTICATED"
    assert response.headers["www-authenticate"] == 'Bearer error="invalid_token"'


async def test_a_token_from_another_issuer_with_its_own_key_is_401(
    client: httpx.AsyncClient, admin: Account
) -> None:
    outsider = TestSigner()

    response = await client.get("/api/users", headers=bearer(outsider.token(admin.id, "admin")))

    assert response.status_code == 401


@pytest.mark.parametrize(
    "authorization", ["", "Bearer", "Basic dXNlcjpwYXNz", "Token abc", "Bearer a b"]
)
async def test_a_malformed_authorization_header_is_401(
    client: httpx.AsyncClient, authorization: str
) -> None:
    response = await client.get("/api/users", headers={"Authorization": authorization})

    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")


async def test_public_endpoints_need_no_token(client: httpx.AsyncClient) -> None:
    for path in ("/.well-known/jwks.json", "/health", "/ready"):
        assert (await client.get(path)).status_code == 200, path


async def test_the_configured_admin_exists_after_start_up(
    client: httpx.AsyncClient, admin: Account
) -> None:
    response = await client.get(f"/api/users/{admin.id}", headers=admin.headers)

    assert response.json()["data"]["role"] == "admin"


async def test_ensuring_the_admin_concurrently_and_repeatedly_creates_exactly_one(
    client: httpx.AsyncClient,
    base_url: str,  # base_url: the running app has opened the ORM
) -> None:
    email = f"ops-{uuid.uuid4().hex[:6]}@example.com"
    replicas = [_user_service() for _ in range(4)]  # as if several replicas started at once

    await asyncio.gather(*(service.ensure_admin(email, "ops-password-1") for service in replicas))
    await replicas[0].ensure_admin(email, "ops-password-1")  # a restart

    assert await User.filter(email=email).count() == 1
    login = await client.post(
        "/api/auth/token", json={"email": email, "password": "ops-password-1"}
    )
    assert login.status_code == 200


async def test_ensuring_the_admin_never_promotes_an_account_someone_registered_first(
    client: httpx.AsyncClient,
    base_url: str,  # base_url: the running app has opened the ORM
) -> None:
    """The squatter attack (#12): sign up with the address the operator will configure."""
    email = f"squat-{uuid.uuid4().hex[:6]}@example.com"
    await client.post(
        "/api/users", json={"name": "Squatter", "email": email, "password": "squatter-pw"}
    )

    with pytest.raises(AdminEmailTakenError):
        await _user_service().ensure_admin(email, "the-real-admin-pw")

    user = await User.get(email=email)
    squatter = await client.post(
        "/api/auth/token", json={"email": email, "password": "squatter-pw"}
    )
    real_admin = await client.post(
        "/api/auth/token", json={"email": email, "password": "the-real-admin-pw"}
    )
    assert user.role is Role.CUSTOMER
    assert squatter.status_code == 200  # neither promoted nor robbed of their password
    assert real_admin.status_code == 401


async def test_a_password_rotated_through_the_api_survives_ensuring_the_admin_again(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    existing = await new_account("admin")
    rotated = await client.patch(
        f"/api/users/{existing.id}",
        json={"password": "rotated-by-the-admin", "currentPassword": existing.password},
        headers=existing.headers,
    )
    assert rotated.status_code == 200

    await _user_service().ensure_admin(existing.email, existing.password)  # a restart

    old = await client.post(
        "/api/auth/token", json={"email": existing.email, "password": existing.password}
    )
    new = await client.post(
        "/api/auth/token", json={"email": existing.email, "password": "rotated-by-the-admin"}
    )
    assert (old.status_code, new.status_code) == (401, 200)


async def test_no_log_line_carries_a_password_a_hash_or_a_token(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    email, password = f"quiet-{uuid.uuid4().hex[:6]}@example.com", "never-log-me-1"

    await client.post("/api/users", json={"name": "Quiet", "email": email, "password": password})
    token = (
        await client.post("/api/auth/token", json={"email": email, "password": password})
    ).json()["data"]["accessToken"]
    await client.post("/api/auth/token", json={"email": email, "password": "wrong-and-secret"})
    await client.get("/api/users", headers=bearer(token))

    logged = caplog.text + "".join(str(record.__dict__) for record in caplog.records)
    assert caplog.records  # the requests were logged...
    for secret in (password, "wrong-and-secret", token, "$argon2"):
        assert secret not in logged  # ...without their secrets


def _sign(key: Ed25519PrivateKey, kid: str, settings: Settings, **claims: Any) -> str:
    now = int(time.time())
    base = {"iss": settings.jwt_issuer, "aud": settings.jwt_audience, "role": "customer"}
    payload = {**base, "iat": now, "exp": now + 300, "jti": uuid.uuid4().hex, **claims}
    return jwt.encode(payload, key, algorithm="EdDSA", headers={"kid": kid})


def _user_service() -> UserService:
    """A UserService on the running app's database, with the tests' cheap Argon2."""
    hasher = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    throttle = Throttle(Limiter(MemoryBuckets()), Settings().budgets)
    sessions = SessionService(
        SessionRepository(),
        UserRepository(),
        TokenIssuer(
            SigningKeys.of(Ed25519PrivateKey.generate()), issuer="i", audience="a", ttl_s=900
        ),
        throttle,
        refresh_ttl_s=3600,
        max_lifetime_s=7200,
    )
    return UserService(UserRepository(), Passwords(hasher), sessions, throttle)
