"""orders-service's contract with users-service: does this user exist? (``UsersServiceDirectory``)
Whose is this API key, and what may it do? (``CallerCheck.resolve_api_key``, which the gateway
and webhooks-service share.)

The real client asks Pact's mock users-service; the pact it writes must equal the committed
``contracts/pacts/orders-service-users-service.json``, which users-service's own suite
verifies against a real users-service (users-service/tests/contract).
"""

from __future__ import annotations

import uuid
from pathlib import Path

from pact import Pact, match

from api_shared.auth.principal import Principal
from api_shared.http import Replicas
from api_shared.standing import USERS_UNAVAILABLE, CallerCheck
from api_testkit.http_sessions import open_session
from api_testkit.pacts import ORDERS_SERVICE, USERS_SERVICE, from_state, new_pact, written_pact
from orders_service.clients import UsersServiceDirectory

# Examples the consumer test sees; the verification uses the ids and tokens the provider
# states make (``from_state``).
EXAMPLE_USER = uuid.UUID("6f1c8a52-3f5e-4c1b-9a57-2d0e4b8c7a11")
MISSING_USER = uuid.UUID("00000000-0000-4000-8000-000000000000")
EXAMPLE_TOKEN = "Bearer eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJl"
EXAMPLE_KEY = "ak_live_" + "x" * 43
EXAMPLE_KEY_ID = "0b6f2c9e-1d3a-4e5f-8a7b-9c0d1e2f3a4b"


def key_description() -> Pact:
    """``GET /api/api-keys/current`` with the key itself: what ``CallerCheck`` reads back."""
    pact = new_pact(ORDERS_SERVICE, USERS_SERVICE)
    (
        pact.upon_receiving("a request describing the API key that authenticates it")
        .given("a customer holds an API key with orders:read")
        .with_request("GET", "/api/api-keys/current")
        .with_header("Authorization", from_state("Bearer ${apiKey}", f"Bearer {EXAMPLE_KEY}"))
        .will_respond_with(200)
        .with_body(
            {
                "data": {
                    "id": match.uuid(EXAMPLE_KEY_ID),
                    "scopes": match.each_like("orders:read"),
                    "owner": {"id": match.uuid(str(EXAMPLE_USER)), "role": "customer"},
                }
            },
            content_type="application/json",
        )
    )
    return pact


async def test_orders_service_asks_users_service_about_users_and_api_keys(tmp_path: Path) -> None:
    exists = new_pact(ORDERS_SERVICE, USERS_SERVICE)
    (
        exists.upon_receiving("an admin's request for a customer who exists")
        .given("an admin is logged in and a customer exists")
        .with_request("GET", from_state("/api/users/${userId}", f"/api/users/{EXAMPLE_USER}"))
        .with_header("Authorization", from_state("Bearer ${token}", EXAMPLE_TOKEN))
        .will_respond_with(200)
    )
    missing = new_pact(ORDERS_SERVICE, USERS_SERVICE)
    (
        missing.upon_receiving("an admin's request for a user who does not exist")
        .given("an admin is logged in")
        .with_request("GET", f"/api/users/{MISSING_USER}")
        .with_header("Authorization", from_state("Bearer ${token}", EXAMPLE_TOKEN))
        .will_respond_with(404)
    )
    async with open_session(timeout_s=5.0) as http:
        for pact, user, found in ((exists, EXAMPLE_USER, True), (missing, MISSING_USER, False)):
            with pact.serve() as mock:
                users = UsersServiceDirectory(
                    Replicas(http, [str(mock.url)], name="users-service", message=USERS_UNAVAILABLE)
                )
                assert await users.exists(user, authorization=EXAMPLE_TOKEN) is found
        key = key_description()
        with key.serve() as mock:
            replicas = Replicas(
                http, [str(mock.url)], name="users-service", message=USERS_UNAVAILABLE
            )
            principal = await CallerCheck(replicas, cache_s=5).resolve_api_key(EXAMPLE_KEY)
    assert principal == Principal(
        str(EXAMPLE_USER),
        "customer",
        api_key_id=EXAMPLE_KEY_ID,
        scopes=frozenset({"orders:read"}),
    )
    written_pact(tmp_path, exists, missing, key)
