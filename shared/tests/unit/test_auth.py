"""The shared bearer-token verifier: what it accepts, what it refuses, what it caches."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Any

import jwt
import pytest
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from sanic.compat import Header

from api_shared.auth import verifier as auth
from api_shared.auth.keys import JwksKeySource, public_keys_from_jwks
from api_shared.auth.principal import Principal
from api_shared.auth.request import authenticate, bearer_token, optional_principal
from api_shared.auth.verifier import TokenVerifier, jwks_verifier
from api_shared.errors import UnauthenticatedError
from api_shared.http import HttpSession
from api_shared.settings import TokenSettings
from api_testkit.aiohttp_servers import serving
from api_testkit.tokens import TestSigner

INVALID_TOKEN_CHALLENGE = 'Bearer error="invalid_token"'


class CountingKeys:
    """A key source that counts lookups: a cache hit makes none."""

    def __init__(self, keys: dict[str, Ed25519PublicKey]) -> None:
        self.keys = keys
        self.lookups = 0

    async def get(self, kid: str) -> Ed25519PublicKey | None:
        self.lookups += 1
        return self.keys.get(kid)

    def still_trusts(self, kid: str) -> bool:
        return kid in self.keys


@pytest.fixture
def signer() -> TestSigner:
    return TestSigner()


@pytest.fixture
def keys(signer: TestSigner) -> CountingKeys:
    return CountingKeys({signer.kid: signer.private_key.public_key()})


@pytest.fixture
def verifier(signer: TestSigner, keys: CountingKeys) -> TokenVerifier:
    return TokenVerifier(keys, issuer=signer.issuer, audience=signer.audience)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge(header: dict[str, Any], claims: dict[str, Any], sign: Any = None) -> str:
    """A JWT assembled by hand, signed by ``sign(signing_input)`` (no signature if None)."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    signature = sign(signing_input.encode()) if sign else b""
    return f"{signing_input}.{b64(signature)}"


def claims_of(signer: TestSigner, **overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {"iss": signer.issuer, "aud": signer.audience, "sub": "user-1", "role": "customer"}
    return {**claims, "iat": now, "exp": now + 900, **overrides}


async def refused(verifier: TokenVerifier, token: str) -> UnauthenticatedError:
    with pytest.raises(UnauthenticatedError) as caught:
        await verifier.verify(token)
    assert caught.value.headers["WWW-Authenticate"] == INVALID_TOKEN_CHALLENGE
    return caught.value


async def test_a_valid_token_yields_its_subject_and_role(
    signer: TestSigner, verifier: TokenVerifier
) -> None:
    principal = await verifier.verify(signer.token("user-1", role="admin"))

    assert principal == Principal(subject="user-1", role="admin")
    assert principal.is_admin


async def test_the_login_time_is_read_when_the_token_says_it(
    signer: TestSigner, verifier: TokenVerifier
) -> None:
    # auth_time (OIDC's): when the person logged in; tokens issued before it have none.
    logged_in = int(time.time()) - 700
    with_it = await verifier.verify(signer.token("user-1", auth_time=logged_in))
    without = await verifier.verify(signer.token("user-2"))

    assert with_it.auth_time == logged_in
    assert without.auth_time is None


async def test_an_expired_token_is_refused(signer: TestSigner, verifier: TokenVerifier) -> None:
    now = int(time.time())
    error = await refused(verifier, signer.token("user-1", iat=now - 1000, exp=now - 60))

    assert "expired" in error.message


async def test_a_token_expired_within_the_leeway_is_still_accepted(
    signer: TestSigner, verifier: TokenVerifier
) -> None:
    now = int(time.time())
    principal = await verifier.verify(signer.token("user-1", iat=now - 900, exp=now - 10))

    assert principal.subject == "user-1"


def test_a_leeway_above_thirty_seconds_is_refused(keys: CountingKeys) -> None:
    with pytest.raises(ValueError, match="leeway"):
        TokenVerifier(keys, issuer="i", audience="a", leeway_s=31)


@pytest.mark.parametrize(
    "overrides",
    [
        {"aud": "another-api"},
        {"iss": "someone-else"},
        {"aud": None},
        {"iss": None},
        {"exp": None},
        {"sub": None},
        {"role": None},
        {"sub": ""},
        {"sub": 42},
        {"iat": int(time.time()) + 3600},
        {"nbf": int(time.time()) + 3600},
        {"auth_time": "yesterday"},
        {"auth_time": True},
    ],
    ids=repr,
)
async def test_a_token_with_wrong_or_missing_claims_is_refused(
    signer: TestSigner, verifier: TokenVerifier, overrides: dict[str, Any]
) -> None:
    await refused(verifier, signer.token("user-1", **overrides))


async def test_alg_none_is_refused(signer: TestSigner, verifier: TokenVerifier) -> None:
    token = forge({"alg": "none", "kid": signer.kid}, claims_of(signer))

    error = await refused(verifier, token)

    assert "algorithm" in error.message


@pytest.mark.parametrize(
    "encoding",
    [serialization.Encoding.PEM, serialization.Encoding.Raw],
    ids=["pem", "raw"],
)
async def test_hs256_signed_with_the_public_key_as_secret_is_refused(
    signer: TestSigner, verifier: TokenVerifier, encoding: serialization.Encoding
) -> None:
    public_format = (
        serialization.PublicFormat.Raw
        if encoding is serialization.Encoding.Raw
        else serialization.PublicFormat.SubjectPublicKeyInfo
    )
    secret = signer.private_key.public_key().public_bytes(encoding, public_format)
    token = forge(
        {"alg": "HS256", "typ": "JWT", "kid": signer.kid},
        claims_of(signer),
        lambda data: hmac.new(secret, data, hashlib.sha256).digest(),
    )

    await refused(verifier, token)


async def test_a_token_signed_with_another_algorithm_is_refused(
    signer: TestSigner, keys: CountingKeys, verifier: TokenVerifier
) -> None:
    token = jwt.encode(
        claims_of(signer),
        ec.generate_private_key(ec.SECP256R1()),
        algorithm="ES256",
        headers={"kid": signer.kid},
    )

    await refused(verifier, token)
    assert keys.lookups == 0  # refused on the header alone


async def test_a_token_signed_by_a_foreign_key_under_a_known_kid_is_refused(
    signer: TestSigner, verifier: TokenVerifier
) -> None:
    token = jwt.encode(
        claims_of(signer),
        Ed25519PrivateKey.generate(),
        algorithm="EdDSA",
        headers={"kid": signer.kid},
    )

    await refused(verifier, token)


@pytest.mark.parametrize("kid", ["unknown-kid", None, 7], ids=["unknown", "absent", "number"])
async def test_a_token_whose_kid_names_no_known_key_is_refused(
    signer: TestSigner, verifier: TokenVerifier, kid: object
) -> None:
    header = {"alg": "EdDSA", "typ": "JWT"} | ({"kid": kid} if kid is not None else {})
    token = forge(header, claims_of(signer), signer.private_key.sign)

    await refused(verifier, token)


async def test_a_token_with_a_tampered_payload_is_refused(
    signer: TestSigner, verifier: TokenVerifier
) -> None:
    header, _, signature = signer.token("user-1").split(".")
    promoted = b64(json.dumps(claims_of(signer, role="admin")).encode())

    await refused(verifier, f"{header}.{promoted}.{signature}")


@pytest.mark.parametrize(
    "token",
    ["", "abc", "a.b.c", "a.b", "...", "eyJhbGciOiJFZERTQSJ9.e30", "x" * 5000, "\udce9.a.b"],
    ids=["empty", "one-part", "garbage", "two-parts", "dots", "no-signature", "huge", "not-utf8"],
)
async def test_a_malformed_token_is_refused(verifier: TokenVerifier, token: str) -> None:
    await refused(verifier, token)


async def test_a_repeated_token_is_served_from_the_cache(
    signer: TestSigner, keys: CountingKeys, verifier: TokenVerifier
) -> None:
    token = signer.token("user-1")

    first = await verifier.verify(token)
    second = await verifier.verify(token)

    assert first == second
    assert keys.lookups == 1


async def test_a_tampered_copy_of_a_cached_token_never_hits_the_cache(
    signer: TestSigner, keys: CountingKeys, verifier: TokenVerifier
) -> None:
    token = signer.token("user-1")
    await verifier.verify(token)
    header, payload, signature = token.split(".")
    tampered_signature = ("A" if signature[0] != "A" else "B") + signature[1:]

    await refused(verifier, f"{header}.{payload}.{tampered_signature}")

    assert keys.lookups == 2  # verified afresh, and refused
    assert await verifier.verify(token) == Principal("user-1", "customer")


async def test_a_refused_token_is_not_cached(
    signer: TestSigner, keys: CountingKeys, verifier: TokenVerifier
) -> None:
    token = signer.token("user-1", aud="another-api")

    await refused(verifier, token)
    await refused(verifier, token)

    assert keys.lookups == 2


async def test_the_cache_is_bounded_and_drops_its_oldest_entry(
    signer: TestSigner, keys: CountingKeys
) -> None:
    verifier = TokenVerifier(keys, issuer=signer.issuer, audience=signer.audience, cache_size=2)
    oldest, middle, newest = (signer.token(f"user-{n}") for n in range(3))
    for token in (oldest, middle, newest):
        await verifier.verify(token)

    await verifier.verify(newest)
    assert keys.lookups == 3
    await verifier.verify(oldest)
    assert keys.lookups == 4


async def test_a_cached_verification_expires_with_its_token(
    signer: TestSigner,
    keys: CountingKeys,
    verifier: TokenVerifier,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = int(time.time())
    token = signer.token("user-1", exp=now + 60)
    await verifier.verify(token)

    # The cache's clock moves on; PyJWT's does not, so a re-verification succeeds.
    monkeypatch.setattr(auth, "time", SimpleNamespace(time=lambda: now + 60 + 29))
    await verifier.verify(token)
    assert keys.lookups == 1  # within the leeway: still cached
    monkeypatch.setattr(auth, "time", SimpleNamespace(time=lambda: now + 60 + 31))
    await verifier.verify(token)
    assert keys.lookups == 2  # expired: verified afresh


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("Bearer abc.def.ghi", "abc.def.ghi"),
        ("bearer abc.def.ghi", "abc.def.ghi"),
        ("BEARER   abc.def.ghi  ", "abc.def.ghi"),
    ],
)
def test_a_bearer_header_yields_its_token(header: str | None, expected: str | None) -> None:
    assert bearer_token(header) == expected


@pytest.mark.parametrize(
    "header",
    ["", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Token abc", "abc.def.ghi", "Bearer a b"],
    ids=["empty", "scheme-only", "scheme-space", "basic", "other-scheme", "no-scheme", "two"],
)
def test_a_malformed_authorization_header_is_unauthenticated(header: str) -> None:
    with pytest.raises(UnauthenticatedError) as caught:
        bearer_token(header)

    assert caught.value.headers["WWW-Authenticate"] == "Bearer"


def fake_request(verifier: TokenVerifier, *authorization: str) -> Any:
    return SimpleNamespace(
        headers=Header([("authorization", value) for value in authorization]),
        ctx=SimpleNamespace(),
        # The app's context holds the one verifier (api_shared.auth.Authenticating).
        app=SimpleNamespace(ctx=SimpleNamespace(context=SimpleNamespace(verifier=verifier))),
    )


async def test_authenticate_without_a_token_challenges_without_an_error_code(
    verifier: TokenVerifier,
) -> None:
    with pytest.raises(UnauthenticatedError) as caught:
        await authenticate(fake_request(verifier))

    assert caught.value.headers["WWW-Authenticate"] == "Bearer"


async def test_two_authorization_headers_are_unauthenticated_even_if_both_are_valid(
    signer: TestSigner, verifier: TokenVerifier
) -> None:
    token = signer.token("user-1")

    with pytest.raises(UnauthenticatedError) as caught:
        await authenticate(fake_request(verifier, f"Bearer {token}", f"Bearer {token}"))

    assert "single Authorization header" in caught.value.message


async def test_authenticate_remembers_the_principal_on_the_request(
    signer: TestSigner, keys: CountingKeys, verifier: TokenVerifier
) -> None:
    request = fake_request(verifier, f"Bearer {signer.token('user-1')}")

    principal = await authenticate(request)

    assert request.ctx.principal == principal == Principal("user-1", "customer")
    assert await authenticate(request) is principal


async def test_optional_principal_is_none_without_a_header_and_strict_with_one(
    verifier: TokenVerifier,
) -> None:
    assert await optional_principal(fake_request(verifier)) is None
    with pytest.raises(UnauthenticatedError):
        await optional_principal(fake_request(verifier, "Bearer not-a-token"))


def test_only_usable_ed25519_keys_are_read_from_a_jwks(signer: TestSigner) -> None:
    jwks: Any = signer.jwks()
    good = jwks["keys"][0]
    document = {
        "keys": [
            good,
            {"kty": "RSA", "kid": "rsa", "n": "AQAB", "e": "AQAB"},
            {"kty": "OKP", "crv": "Ed448", "kid": "ed448", "x": good["x"]},
            {"kty": "OKP", "crv": "Ed25519", "kid": "broken", "x": 12},
            {"kty": "OKP", "crv": "Ed25519", "x": good["x"]},
            "not-an-object",
        ]
    }

    keys = public_keys_from_jwks(document)

    assert list(keys) == [signer.kid]


@pytest.mark.parametrize("document", [[], "keys", {"keys": 5}, {"kids": []}], ids=repr)
def test_a_document_that_is_not_a_jwks_is_an_error_not_an_empty_key_set(document: Any) -> None:
    with pytest.raises(ValueError, match="JWKS"):
        public_keys_from_jwks(document)


class FakeJwksServer:
    """A JWKS endpoint on a loopback port answering whatever the test sets; while ``gate``
    is set, answers wait for it."""

    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.body = body
        self.fetches = 0
        self.gate: asyncio.Event | None = None
        self.asked = asyncio.Event()  # set by the first fetch
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.fetches += 1
        self.asked.set()
        if self.gate is not None:
            await self.gate.wait()
        return web.json_response(self.body, status=self.status)


@pytest.fixture
async def server(signer: TestSigner) -> AsyncIterator[FakeJwksServer]:
    server = FakeJwksServer(200, signer.jwks())
    app = web.Application()
    app.router.add_get("/.well-known/jwks.json", server.handle)
    async with serving(app) as url:
        server.url = f"{url}/.well-known/jwks.json"
        yield server


@pytest.fixture
def source_of(server: FakeJwksServer, http_session: HttpSession) -> Callable[..., JwksKeySource]:
    """``source_of(**options)``: a key source of ``server``'s JWKS."""

    def source(**options: Any) -> JwksKeySource:
        return JwksKeySource(server.url, http_session, **options)

    return source


async def test_jwks_keys_are_fetched_when_a_kid_is_first_seen(
    signer: TestSigner, server: FakeJwksServer, source_of: Callable[..., JwksKeySource]
) -> None:
    source = source_of()

    assert await source.get(signer.kid) == signer.private_key.public_key()
    assert await source.get(signer.kid) is not None
    assert server.fetches == 1


async def test_an_unknown_kid_refetches_the_jwks_at_most_once_per_interval(
    server: FakeJwksServer, source_of: Callable[..., JwksKeySource]
) -> None:
    source = source_of(min_refresh_s=3600)
    await source.refresh()

    results = await asyncio.gather(*(source.get(f"made-up-{n}") for n in range(20)))

    assert results == [None] * 20
    assert server.fetches == 1


async def test_a_rotated_in_key_is_found_by_refreshing(
    signer: TestSigner, server: FakeJwksServer, source_of: Callable[..., JwksKeySource]
) -> None:
    source = source_of(min_refresh_s=0)
    await source.refresh()
    newcomer = TestSigner()
    server.body = {"keys": [*newcomer.jwks()["keys"], *signer.jwks()["keys"]]}

    assert await source.get(newcomer.kid) == newcomer.private_key.public_key()
    assert server.fetches == 2


@pytest.mark.parametrize(
    ("status", "body"), [(503, {"error": "down"}), (200, ["not", "a", "jwks"])], ids=["503", "list"]
)
async def test_a_failed_refresh_keeps_the_keys_already_known(
    signer: TestSigner,
    server: FakeJwksServer,
    source_of: Callable[..., JwksKeySource],
    status: int,
    body: Any,
) -> None:
    source = source_of(min_refresh_s=0)
    await source.refresh()
    server.status, server.body = status, body

    assert await source.get("unknown") is None
    assert await source.get(signer.kid) == signer.private_key.public_key()
    assert server.fetches == 2


async def test_a_verifier_over_a_jwks_url_accepts_tokens_of_the_published_key(
    signer: TestSigner, source_of: Callable[..., JwksKeySource]
) -> None:
    verifier = TokenVerifier(source_of(), issuer=signer.issuer, audience=signer.audience)

    assert (await verifier.verify(signer.token("user-9"))).subject == "user-9"


async def test_the_shared_builder_verifies_by_the_jwks_and_refreshes_it_in_the_background(
    signer: TestSigner, server: FakeJwksServer, http_session: HttpSession
) -> None:
    settings = TokenSettings(
        jwks_url=server.url, jwt_issuer=signer.issuer, jwt_audience=signer.audience
    )
    verifier, refresh = jwks_verifier(settings, http_session)

    await refresh.start()
    try:
        # The refresh fetches at once, before any token comes.
        await asyncio.wait_for(server.asked.wait(), 5)
        principal = await verifier.verify(signer.token("user-9"))
    finally:
        await refresh.stop()

    assert principal.subject == "user-9"
    assert server.fetches == 1


async def test_after_a_failed_fetch_the_next_token_retries_soon_not_after_the_full_interval(
    signer: TestSigner, server: FakeJwksServer, source_of: Callable[..., JwksKeySource]
) -> None:
    server.status, server.body = 503, {"error": "starting"}
    source = source_of(min_refresh_s=3600, retry_after_failure_s=0)
    await source.refresh()  # users-service not up yet
    server.status, server.body = 200, signer.jwks()

    assert await source.get(signer.kid) == signer.private_key.public_key()
    assert server.fetches == 2


async def test_failed_fetches_are_still_throttled(
    signer: TestSigner, server: FakeJwksServer, source_of: Callable[..., JwksKeySource]
) -> None:
    server.status, server.body = 503, {"error": "down"}
    source = source_of(retry_after_failure_s=3600)

    results = await asyncio.gather(*(source.get(signer.kid) for _ in range(10)))

    assert results == [None] * 10
    assert server.fetches == 1


async def test_a_token_arriving_while_the_keys_are_being_fetched_waits_for_them(
    signer: TestSigner, server: FakeJwksServer, source_of: Callable[..., JwksKeySource]
) -> None:
    server.gate = answer = asyncio.Event()
    source = source_of()
    at_start = asyncio.create_task(source.refresh())  # a service fetches its keys at start-up
    await asyncio.sleep(0.01)
    first_token = asyncio.create_task(source.get(signer.kid))
    await asyncio.sleep(0.01)
    answer.set()

    assert await first_token == signer.private_key.public_key()
    await at_start
