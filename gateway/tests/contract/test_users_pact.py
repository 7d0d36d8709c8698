"""The gateway's contract with users-service: what it asks of it and what it reads back.

- the token keys (``/.well-known/jwks.json``), read by the verifier the gateway wires
  (``api_shared.auth.jwks_verifier``): Ed25519 keys by ``kid``;
- login and refresh, forwarded by the gateway's real proxy: the token pair comes back;
- a login refused by users-service's own budget: its 429 and ``RateLimit-Policy`` reach the
  client unchanged (the gateway keeps users-service's limit headers);
- ``/ready``, the gateway's ``/status`` probe of each replica;
- its API document, which the gateway merges into its own ``/openapi.json``.

The pact written must equal the committed ``contracts/pacts/gateway-users-service.json``,
which users-service's own suite verifies against a real users-service.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from pact import Pact, match
from sanic import Sanic

from api_shared.auth.verifier import jwks_verifier
from api_testkit.http_sessions import open_session
from api_testkit.in_process import serve_in_process
from api_testkit.pacts import GATEWAY, USERS_SERVICE, from_state, new_pact, written_pact
from api_testkit.ports import free_port
from api_testkit.tokens import TestSigner
from gateway.app import create_app
from gateway.context import wire
from gateway.docs.openapi import OPENAPI_PATH, openapi_docs
from gateway.routing import USERS
from gateway.settings import Settings
from gateway.upstream.replicas import Upstream

# A fixed key, so that the pact's example JWKS is the same on every run (never a secret).
EXAMPLE_SIGNER = TestSigner(
    private_key=Ed25519PrivateKey.from_private_bytes(b"pact example key, never a secret"),
    kid="pact-example",
)
CUSTOMER: dict[str, object] = {
    "email": "pact-customer@example.com",
    "password": "correct horse battery",
}
THROTTLED: dict[str, object] = {
    "email": "pact-throttled@example.com",
    "password": "not the password",
}
# The paths the gateway routes to users-service that its merged document must show.
DOCUMENTED = {
    "/api/auth/token": "post",
    "/api/auth/refresh": "post",
    "/.well-known/jwks.json": "get",
}
POLICY = '"login-account";q=10;w=60'
TOKENS = {
    "data": {
        "accessToken": match.str("eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJjdXN0b21lciJ9.c2lnbmF0dXJl"),
        "tokenType": "Bearer",
        "expiresIn": match.int(900),
        "refreshToken": match.str("example-refresh-token"),
    }
}


def refused_url() -> str:
    return f"http://127.0.0.1:{free_port()}"  # nothing listens there


@asynccontextmanager
async def gateway_before(users_url: str) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """A gateway in this process whose users-service is ``users_url`` (the others refuse):
    a client of its public port, and its admin port's URL."""
    Sanic.test_mode = True
    settings = Settings(
        users_service_urls=[users_url],
        orders_service_urls=[refused_url()],
        books_service_urls=[refused_url()],
        webhooks_service_urls=[refused_url()],
        admin_port=free_port(),
    )
    # Its own verifier: the keys are the other test's; this one asks users-service nothing more.
    app = create_app(settings, context=wire(settings, verifier=EXAMPLE_SIGNER.verifier()))
    async with serve_in_process(app) as url, httpx.AsyncClient(base_url=url) as client:
        yield client, f"http://127.0.0.1:{settings.admin_port}"


async def test_the_gateway_keeps_to_its_contract_with_users_service(tmp_path: Path) -> None:
    # A mock server each: the gateway's proxy, its key fetch and its document merge are
    # separate clients, which ask at times of their own.
    written_pact(tmp_path, await token_keys(), await api_document(), await forwarded_calls())


async def token_keys() -> Pact:
    jwk = EXAMPLE_SIGNER.jwks()["keys"][0]
    pact = new_pact(GATEWAY, USERS_SERVICE)
    (
        pact.upon_receiving("a request for the token keys")
        .with_request("GET", "/.well-known/jwks.json")
        .will_respond_with(200)
        .with_body(
            {
                "keys": match.each_like(
                    {
                        "kty": match.regex("OKP", regex="^OKP$"),
                        "crv": match.regex("Ed25519", regex="^Ed25519$"),
                        "kid": match.str(jwk["kid"]),
                        "x": match.str(jwk["x"]),
                    },
                    min=1,
                )
            },
            "application/json",
        )
    )
    with pact.serve() as mock:
        settings = Settings(jwks_url=f"{mock.url}/.well-known/jwks.json")
        async with open_session(timeout_s=5.0) as http:
            verifier, _ = jwks_verifier(settings, http)
            principal = await verifier.verify(EXAMPLE_SIGNER.token("a-customer"))
    assert principal.subject == "a-customer"
    return pact


async def api_document() -> Pact:
    """The gateway's /openapi.json merges users-service's own document: the public paths it
    routes there must be in it (the operations themselves are users-service's to describe)."""
    pact = new_pact(GATEWAY, USERS_SERVICE)
    (
        pact.upon_receiving("a request for the API document")
        .with_request("GET", OPENAPI_PATH)
        .will_respond_with(200)
        .with_body(
            {"paths": {path: {method: match.type({})} for path, method in DOCUMENTED.items()}},
            "application/json",
        )
    )
    with pact.serve() as mock:
        async with open_session(timeout_s=5.0) as http:
            docs = openapi_docs(http, {USERS: Upstream.of(USERS, [str(mock.url)], down_s=5.0)})
            merged = await docs.get()
    assert merged.complete
    paths = orjson.loads(merged.body)["paths"]
    assert all(method in paths[path] for path, method in DOCUMENTED.items())
    return pact


async def forwarded_calls() -> Pact:
    pact = new_pact(GATEWAY, USERS_SERVICE)
    (
        pact.upon_receiving("a login")
        .given("a customer can log in", CUSTOMER)
        .with_request("POST", "/api/auth/token")
        .with_body(CUSTOMER, "application/json")
        .will_respond_with(200)
        .with_body(TOKENS, "application/json")
    )
    (
        pact.upon_receiving("a refresh")
        .given("a customer has logged in")
        .with_request("POST", "/api/auth/refresh")
        .with_body(
            {"refreshToken": from_state("${refreshToken}", "example-refresh-token")},
            "application/json",
        )
        .will_respond_with(200)
        .with_body(TOKENS, "application/json")
    )
    (
        pact.upon_receiving("a login past the account's budget of failed logins")
        .given("a customer's failed logins used up the account's budget", THROTTLED)
        .with_request("POST", "/api/auth/token")
        .with_body(THROTTLED, "application/json")
        .will_respond_with(429)
        .with_header("RateLimit-Policy", match.str(POLICY))
        .with_header("Retry-After", match.regex("6", regex=r"^[0-9]+$"))
    )
    (pact.upon_receiving("a readiness probe").with_request("GET", "/ready").will_respond_with(200))
    with pact.serve() as mock:
        async with gateway_before(str(mock.url)) as (gateway, admin_url):
            login = await gateway.post("/api/auth/token", json=CUSTOMER)
            assert login.status_code == 200, login.text
            assert login.json()["data"]["tokenType"] == "Bearer"
            refresh = await gateway.post(
                "/api/auth/refresh", json={"refreshToken": "example-refresh-token"}
            )
            assert refresh.status_code == 200, refresh.text
            throttled = await gateway.post("/api/auth/token", json=THROTTLED)
            assert throttled.status_code == 429, throttled.text
            assert throttled.headers["RateLimit-Policy"] == POLICY
            status = await gateway.get(f"{admin_url}/status")
            assert status.json()["upstreams"]["users"]["status"] == "ok", status.text
    return pact
