"""Token attacks (docs/api.md#authentication), through the gateway and directly at each service.

Every forged, altered, stale or malformed credential is 401 UNAUTHENTICATED with a
``WWW-Authenticate: Bearer`` challenge, never a 500, at the gateway and at users-service and
orders-service themselves (they verify tokens with the same shared code, trusting nothing).
Forgeries with a valid signature are made with the stack's own signing key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from api_testkit.actors import admin, customer
from api_testkit.contract import assert_refused
from api_testkit.raw_http import HEAD_SENT, RawResponse, http, raw_request
from api_testkit.stack import Stack
from api_testkit.tokens import TestSigner

# Forgeries are signed with the stack's key file and sent to each service's private port.
pytestmark = [pytest.mark.processes, pytest.mark.usefixtures("every_service_survives")]

Forge = Callable[["Keys", str], str]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def assemble(header: Any, claims: Any, sign: Callable[[bytes], bytes] | None = None) -> str:
    """A JWS in compact form, assembled by hand (so that anything can be put in it)."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    signature = sign(signing_input.encode()) if sign else b""
    return f"{signing_input}.{b64(signature)}"


def hs256(secret: bytes) -> Callable[[bytes], bytes]:
    return lambda data: hmac.new(secret, data, hashlib.sha256).digest()


@dataclass(frozen=True)
class Keys:
    """The stack's real signing key (as users-service uses it) and its public forms."""

    private: Ed25519PrivateKey
    kid: str
    jwk: dict[str, Any]
    subject: str
    session_id: str  # of the subject's login: users-service checks that it is open

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims = {
            "iss": "users-service",
            "aud": "api-platform",
            "sub": self.subject,
            "role": "customer",
            "sid": self.session_id,
            "iat": now,
            "exp": now + 900,
            "jti": uuid.uuid4().hex,
            **overrides,
        }
        return {name: value for name, value in claims.items() if value is not None}

    def sign(self, **overrides: Any) -> str:
        """A genuinely signed token, with claims replaced (or dropped with None)."""
        return self.signed(
            {"alg": "EdDSA", "typ": "JWT", "kid": self.kid}, self.claims(**overrides)
        )

    def signed(self, header: Any, claims: Any) -> str:
        return assemble(header, claims, self.private.sign)

    @property
    def raw_public(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )

    @property
    def pem_public(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


@dataclass
class Victim:
    user: dict[str, Any]
    headers: dict[str, str]
    keys: Keys


@pytest.fixture(scope="module")
async def victim(stack: Stack, signing_key: Ed25519PrivateKey) -> Victim:
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=15.0) as gateway:
        user, headers = await customer(gateway)
        jwks = (await gateway.get("/.well-known/jwks.json")).json()
    private = signing_key
    (jwk,) = [key for key in jwks["keys"] if key["x"] == b64(_raw(private))]
    token = headers["Authorization"].removeprefix("Bearer ")
    session_id = jwt.decode(token, options={"verify_signature": False})["sid"]
    return Victim(user, headers, Keys(private, jwk["kid"], jwk, user["id"], session_id))


def _raw(private: Ed25519PrivateKey) -> bytes:
    return private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )


def protected(stack: Stack, victim: Victim) -> list[tuple[str, str]]:
    """(base URL, path) of the victim's own resources: through the gateway and direct."""
    me = victim.user["id"]
    gateway, users, orders = (stack.services[n].url for n in ("gateway", "users", "orders"))
    return [
        (gateway, f"/api/users/{me}"),
        (gateway, "/orders"),
        (gateway, f"/users/{me}/orders"),
        (users, f"/api/users/{me}"),
        (orders, "/orders"),
        (orders, f"/users/{me}/orders"),
    ]


def assert_unauthenticated(response: httpx.Response | RawResponse) -> None:
    assert_refused(response, 401, "UNAUTHENTICATED")
    assert response.headers["www-authenticate"].startswith("Bearer")


def _alg_none(keys: Keys, variant: str) -> str:
    return assemble({"alg": variant, "typ": "JWT", "kid": keys.kid}, keys.claims())


FORGERIES: dict[str, Callable[[Keys], str]] = {
    "alg none": lambda k: _alg_none(k, "none"),
    "alg None": lambda k: _alg_none(k, "None"),
    "alg none signed anyway": lambda k: assemble(
        {"alg": "none", "kid": k.kid}, k.claims(role="admin"), k.private.sign
    ),
    "HS256, raw public key as secret": lambda k: assemble(
        {"alg": "HS256", "typ": "JWT", "kid": k.kid}, k.claims(), hs256(k.raw_public)
    ),
    "HS256, PEM public key as secret": lambda k: assemble(
        {"alg": "HS256", "typ": "JWT", "kid": k.kid}, k.claims(), hs256(k.pem_public)
    ),
    "HS256, JWK x as secret": lambda k: assemble(
        {"alg": "HS256", "kid": k.kid}, k.claims(), hs256(k.jwk["x"].encode())
    ),
    "HS256, JWKS JSON as secret": lambda k: assemble(
        {"alg": "HS256", "kid": k.kid}, k.claims(), hs256(json.dumps(k.jwk).encode())
    ),
    "EdDSA signature under RS256": lambda k: k.signed({"alg": "RS256", "kid": k.kid}, k.claims()),
    "EdDSA signature under ES256": lambda k: k.signed({"alg": "ES256", "kid": k.kid}, k.claims()),
    "a key never published": lambda k: TestSigner().token(k.subject),
    "a key never published, under the real kid": lambda k: jwt.encode(
        k.claims(), Ed25519PrivateKey.generate(), algorithm="EdDSA", headers={"kid": k.kid}
    ),
    "a key never published, with jku": lambda k: jwt.encode(
        k.claims(),
        Ed25519PrivateKey.generate(),
        algorithm="EdDSA",
        headers={"kid": "attacker", "jku": "http://127.0.0.1:1/jwks.json"},
    ),
    "an embedded jwk of the attacker's": lambda k: assemble(
        {"alg": "EdDSA", "jwk": {**k.jwk, "kid": "attacker"}, "kid": "attacker"},
        k.claims(role="admin"),
        Ed25519PrivateKey.generate().sign,
    ),
    "kid path traversal": lambda k: k.signed(
        {"alg": "EdDSA", "kid": "../../../dev/null"}, k.claims()
    ),
    "kid SQL": lambda k: k.signed({"alg": "EdDSA", "kid": "' OR 1=1 --"}, k.claims()),
    "kid not a string": lambda k: k.signed({"alg": "EdDSA", "kid": 0}, k.claims()),
    "no kid": lambda k: k.signed({"alg": "EdDSA"}, k.claims()),
    "role flipped to admin, signature kept": lambda k: _tampered(k, role="admin"),
    "subject switched, signature kept": lambda k: _tampered(k, sub=str(uuid.uuid4())),
    "expiry extended, signature kept": lambda k: _tampered(k, exp=int(time.time()) + 10**6),
    "signature stripped": lambda k: k.sign().rsplit(".", 1)[0] + ".",
    "signature of another token": lambda k: _spliced(k),
    "expired": lambda k: k.sign(exp=int(time.time()) - 120),
    "expired just past the leeway": lambda k: k.sign(exp=int(time.time()) - 31),
    "not yet valid": lambda k: k.sign(nbf=int(time.time()) + 3600),
    "issued in the future": lambda k: k.sign(iat=int(time.time()) + 3600),
    "wrong audience": lambda k: k.sign(aud="another-platform"),
    "audience list without ours": lambda k: k.sign(aud=["a", "b"]),
    "wrong issuer": lambda k: k.sign(iss="https://evil.example.com"),
    "no exp": lambda k: k.sign(exp=None),
    "exp a string": lambda k: k.sign(exp="tomorrow"),
    "no sub": lambda k: k.sign(sub=None),
    "empty sub": lambda k: k.sign(sub=""),
    "sub a number": lambda k: k.sign(sub=42),
    "no iss": lambda k: k.sign(iss=None),
    "no aud": lambda k: k.sign(aud=None),
    "no role": lambda k: k.sign(role=None),
    "role a list": lambda k: k.sign(role=["admin"]),
    "claims an array": lambda k: k.signed({"alg": "EdDSA", "kid": k.kid}, [k.claims()]),
    "header an array": lambda k: k.signed([{"alg": "EdDSA", "kid": k.kid}], k.claims()),
    "crit header": lambda k: k.signed({"alg": "EdDSA", "kid": k.kid, "crit": ["x"]}, k.claims()),
    "a 5 KB token": lambda k: k.sign(pad="a" * 4000),
    "garbage": lambda k: "not-a-token",
    "three dots": lambda k: "...",
    "two parts": lambda k: ".".join(k.sign().split(".")[:2]),
    "four parts": lambda k: k.sign() + ".e30",
}


def _tampered(keys: Keys, **changes: Any) -> str:
    header, _, signature = keys.sign().split(".")
    return f"{header}.{b64(json.dumps(keys.claims(**changes)).encode())}.{signature}"


def _spliced(keys: Keys) -> str:
    header, payload, _ = keys.sign(role="admin").split(".")
    return f"{header}.{payload}.{keys.sign().split('.')[2]}"


@pytest.mark.parametrize("forge", FORGERIES.values(), ids=FORGERIES.keys())
async def test_a_forged_or_invalid_token_is_401_at_the_gateway_and_at_each_service(
    stack: Stack, victim: Victim, forge: Callable[[Keys], str]
) -> None:
    token = forge(victim.keys)
    async with httpx.AsyncClient(timeout=10.0) as client:
        for base, path in protected(stack, victim):
            response = await client.get(base + path, headers={"Authorization": f"Bearer {token}"})
            assert_unauthenticated(response)


async def test_a_tampered_admin_token_changes_nothing_anywhere(
    gateway: httpx.AsyncClient, stack: Stack, victim: Victim
) -> None:
    forged = {"Authorization": f"Bearer {_tampered(victim.keys, role='admin')}"}
    me = f"/api/users/{victim.user['id']}"
    async with httpx.AsyncClient(timeout=10.0) as client:
        for base in (stack.gateway_url, stack.services["users"].url):
            escalate = await client.patch(base + me, json={"role": "admin"}, headers=forged)
            assert_unauthenticated(escalate)
            create = await client.post(
                base + "/api/users", json={"name": "M", "role": "admin"}, headers=forged
            )
            assert_unauthenticated(create)

    still = await gateway.get(me, headers=await admin(gateway, stack))
    assert still.json()["data"] == victim.user


async def test_the_genuine_token_still_works_after_the_attacks(
    stack: Stack, victim: Victim
) -> None:
    # Guards the forgeries above: the same targets with the real thing all answer 200.
    signed_here = {"Authorization": f"Bearer {victim.keys.sign()}"}
    async with httpx.AsyncClient(timeout=10.0) as client:
        for base, path in protected(stack, victim):
            for headers in (victim.headers, signed_here):
                response = await client.get(base + path, headers=headers)
                assert response.status_code == 200, (base, path, response.text)


MALFORMED_AUTHORIZATION = {
    "no scheme": lambda token: [(b"Authorization", token)],
    "Bearer alone": lambda token: [(b"Authorization", b"Bearer")],
    "Bearer and a space": lambda token: [(b"Authorization", b"Bearer ")],
    "Bearer and a tab": lambda token: [(b"Authorization", b"Bearer\t" + token)],
    "two tokens": lambda token: [(b"Authorization", b"Bearer " + token + b" " + token)],
    "two credentials": lambda token: [(b"Authorization", b"Bearer " + token + b", Bearer x")],
    "two Authorization headers": lambda token: [
        (b"Authorization", b"Bearer " + token),
        (b"Authorization", b"Bearer " + token),
    ],
    "Basic": lambda token: [(b"Authorization", b"Basic YWRtaW46YWRtaW4=")],
    "Token scheme": lambda token: [(b"Authorization", b"Token " + token)],
    "empty": lambda token: [(b"Authorization", b"")],
    "non-ASCII (UTF-8)": lambda token: [(b"Authorization", "Bearer é".encode() + token)],
    "non-ASCII (not UTF-8)": lambda token: [(b"Authorization", b"Bearer \xe9" + token)],
    "NUL in the token": lambda token: [(b"Authorization", b"Bearer " + token + b"\x00")],
    "control bytes": lambda token: [(b"Authorization", b"Bearer \x01\x02\x7f")],
}


@pytest.mark.parametrize(
    "authorization", MALFORMED_AUTHORIZATION.values(), ids=MALFORMED_AUTHORIZATION.keys()
)
async def test_a_malformed_authorization_header_is_401_everywhere(
    stack: Stack, victim: Victim, authorization: Callable[[bytes], list[tuple[bytes, bytes]]]
) -> None:
    token = victim.headers["Authorization"].removeprefix("Bearer ").encode()
    for base, path in protected(stack, victim):
        response = await raw_request(base, http("GET", path, authorization(token)))
        assert_unauthenticated(response)


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "bEaReR"])
async def test_the_bearer_scheme_is_case_insensitive(
    stack: Stack, victim: Victim, scheme: str
) -> None:
    token = victim.headers["Authorization"].removeprefix("Bearer ")
    async with httpx.AsyncClient(timeout=10.0) as client:
        for base, path in protected(stack, victim):
            response = await client.get(base + path, headers={"Authorization": f"{scheme} {token}"})
            assert response.status_code == 200, (base, path, response.text)


async def test_a_token_beyond_the_header_limit_is_refused_before_verification(
    stack: Stack, victim: Victim
) -> None:
    # 100 KB cannot reach the verifier: Sanic refuses a head above 8 KiB with 413 (contract
    # shape, no challenge). Up to that limit, an oversized token is a 401 like any other.
    huge = http("GET", "/orders", [(b"Authorization", b"Bearer " + b"A" * 100_000)])
    for name in ("gateway", "users", "orders"):
        response = await raw_request(stack.services[name].url, huge, send_at_most=HEAD_SENT)
        assert_refused(response, 413, "PAYLOAD_TOO_LARGE")
        assert "www-authenticate" not in response.headers
