"""API keys at the gateway: users-service's word on each, yes or no (asked with the key, kept
STANDING_CACHE_S), one bucket per owner for all their keys, and the address's budget paid
before any question."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from aiohttp import web

from api_testkit.aiohttp_servers import serving
from api_testkit.tokens import TestSigner

from .conftest import GatewayClient, StartGateway
from .stand_ins import echo_upstream

OWNER = "7c1f4c0e-0000-4000-8000-000000000001"
KEY = "ak_live_" + "A" * 43
OTHER_KEY = "ak_live_" + "B" * 43  # OWNER's too
STRANGERS_KEY = "ak_live_" + "C" * 43  # another user's
STRANGER = "7c1f4c0e-0000-4000-8000-000000000002"
KEY_IDS = {
    KEY: "3f1e0000-0000-4000-8000-0000000000aa",
    OTHER_KEY: "3f1e0000-0000-4000-8000-bb",
    STRANGERS_KEY: "3f1e0000-0000-4000-8000-cc",
}


@dataclass
class Users:
    """users-service: describes the keys of ``KEY_IDS`` at ``/api/api-keys/current`` (or
    answers ``status`` there), echoes every other request; counts the questions about keys."""

    status: int = 200
    asked: list[str] = field(default_factory=list)
    url: str = ""

    async def current(self, request: web.Request) -> web.Response:
        authorization = request.headers.get("Authorization", "")
        self.asked.append(authorization)
        key = authorization.removeprefix("Bearer ")
        if self.status != 200 or key not in KEY_IDS:
            code = {403: "FORBIDDEN", 503: "UNAVAILABLE"}.get(self.status, "UNAUTHENTICATED")
            status = self.status if self.status != 200 else 401
            return web.json_response({"error": {"code": code, "message": "no"}}, status=status)
        document = {
            "id": KEY_IDS[key],
            "name": "a script",
            "prefix": key[:12],
            "scopes": ["orders:read"],
            "owner": {"id": STRANGER if key == STRANGERS_KEY else OWNER, "role": "customer"},
            "createdAt": "2026-11-28T00:00:00Z",
            "expiresAt": None,
            "lastUsedAt": None,
        }
        return web.json_response({"data": document})

    async def echo(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "upstream": "users",
                "method": request.method,
                "target": request.raw_path,
                "authorization": request.headers.get("Authorization"),
            }
        )


@contextlib.asynccontextmanager
async def users_service() -> AsyncIterator[Users]:
    users = Users()
    app = web.Application()
    app.router.add_get("/api/api-keys/current", users.current)
    app.router.add_route("*", "/{tail:.*}", users.echo)
    async with serving(app) as users.url:
        yield users


@contextlib.asynccontextmanager
async def keys_gateway(
    start_gateway: StartGateway, **settings: object
) -> AsyncIterator[tuple[GatewayClient, Users]]:
    """A gateway in front of ``users_service()`` and echoing orders and books upstreams."""
    async with (
        users_service() as users,
        echo_upstream("orders") as orders,
        echo_upstream("books") as books,
        start_gateway(
            users_service_urls=[users.url],
            orders_service_urls=[orders],
            books_service_urls=[books],
            **settings,
        ) as gateway,
    ):
        yield gateway, users


def bearer(credential: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {credential}"}


async def test_a_key_users_service_describes_is_forwarded_as_sent(
    start_gateway: StartGateway,
) -> None:
    async with keys_gateway(start_gateway) as (gw, users):
        response = await gw.get("/orders?limit=1", headers=bearer(KEY))

    assert response.status_code == 200, response.text
    assert response.json()["upstream"] == "orders"
    # The service resolves the key again (for its scopes): it gets the key, untouched.
    assert response.json()["headers"]["authorization"] == f"Bearer {KEY}"
    assert users.asked == [f"Bearer {KEY}"]


async def test_a_key_users_service_refuses_is_401_on_an_authenticated_route(
    start_gateway: StartGateway,
) -> None:
    unknown = "ak_live_" + "Z" * 43
    async with keys_gateway(start_gateway) as (gw, users):
        refused = await gw.get("/orders", headers=bearer(unknown))
        public = await gw.post("/graphql", json={}, headers=bearer(unknown))

    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "UNAUTHENTICATED"
    assert "revoked" in refused.json()["error"]["message"]
    assert refused.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    # A public route forwards it: its service decides what an invalid credential gets there.
    assert public.status_code == 200
    assert public.json()["upstream"] == "books"
    assert users.asked == [f"Bearer {unknown}"]  # the refusal is kept: asked once


async def test_a_refused_key_is_asked_about_once_within_the_cache_time_then_again(
    start_gateway: StartGateway,
) -> None:
    unknown = "ak_live_" + "Z" * 43
    cache_s = 1.5
    async with keys_gateway(start_gateway, standing_cache_s=cache_s) as (gw, users):
        kept = [await gw.get("/orders", headers=bearer(unknown)) for _ in range(5)]
        refused_at = time.monotonic()
        asked_while_kept = len(users.asked)
        await asyncio.sleep(cache_s - (time.monotonic() - refused_at) + 0.1)
        again = await gw.get("/orders", headers=bearer(unknown))

    assert [r.status_code for r in [*kept, again]] == [401] * 6
    assert asked_while_kept == 1
    assert users.asked == [f"Bearer {unknown}"] * 2


async def test_a_suspended_owners_key_is_403_on_an_authenticated_route(
    start_gateway: StartGateway,
) -> None:
    async with keys_gateway(start_gateway) as (gw, users):
        users.status = 403
        response = await gw.get("/orders", headers=bearer(KEY))

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "FORBIDDEN"


async def test_a_keys_description_is_kept_for_the_cache_time_then_asked_again(
    start_gateway: StartGateway,
) -> None:
    cache_s = 1.5
    async with keys_gateway(start_gateway, standing_cache_s=cache_s) as (gw, users):
        first = await gw.get("/orders", headers=bearer(KEY))
        described_at = time.monotonic()
        users.status = 401  # revoked: users-service says so from now on
        kept = await gw.get("/orders", headers=bearer(KEY))
        asked_while_kept = len(users.asked)
        await asyncio.sleep(cache_s - (time.monotonic() - described_at) + 0.1)
        revoked = await gw.get("/orders", headers=bearer(KEY))

    assert (first.status_code, kept.status_code) == (200, 200)
    assert asked_while_kept == 1
    assert revoked.status_code == 401
    assert revoked.json()["error"]["code"] == "UNAUTHENTICATED"
    assert len(users.asked) == 2


async def test_a_malformed_key_is_refused_without_a_question_to_users_service(
    start_gateway: StartGateway,
) -> None:
    malformed = [
        "ak_live_short",
        "ak_test_" + "A" * 43,
        "ak_live_" + "A" * 42 + "!",
        "ak_live_" + "A" * 44,
        "ak_",
    ]
    async with keys_gateway(start_gateway) as (gw, users):
        answers = [await gw.get("/orders", headers=bearer(key)) for key in malformed]

    for answer in answers:
        assert answer.status_code == 401, answer.text
        assert answer.json()["error"]["message"] == "The API key is malformed."
    assert users.asked == []


async def test_an_owners_keys_share_one_bucket_apart_from_their_tokens_and_others_keys(
    start_gateway: StartGateway, signer: TestSigner
) -> None:
    limits = {
        "rate_limit_rps": 0.01,
        "rate_limit_burst": 2,
        "api_key_rate_limit_rps": 0.1,
        "api_key_rate_limit_burst": 2,
        "address_rate_limit_burst": 100,
    }
    owners_token = bearer(signer.token(OWNER))
    async with keys_gateway(start_gateway, **limits) as (gw, _):
        first_key = [await gw.get("/orders", headers=bearer(KEY)) for _ in range(3)]
        sibling = await gw.get("/orders", headers=bearer(OTHER_KEY))
        strangers = [await gw.get("/orders", headers=bearer(STRANGERS_KEY)) for _ in range(2)]
        token = [await gw.get("/orders", headers=owners_token) for _ in range(3)]
        metrics = (await gw.admin_get("/metrics")).text

    assert [r.status_code for r in first_key] == [200, 200, 429]
    assert first_key[-1].headers["ratelimit-policy"] == '"api-key";q=2;w=20'
    assert first_key[0].headers["ratelimit-policy"] == '"api-key";q=2;w=20'
    # The owner's other key finds the budget spent; another user's key has its own.
    assert sibling.status_code == 429, sibling.text
    assert [r.status_code for r in strangers] == [200, 200]
    assert [r.status_code for r in token] == [200, 200, 429]
    assert token[-1].headers["ratelimit-policy"] == '"default";q=2;w=200'
    assert 'gateway_rate_limited_total{policy="api-key"} 2.0' in metrics


async def test_the_address_budget_is_paid_before_a_key_is_asked_about(
    start_gateway: StartGateway,
) -> None:
    made_up = [f"ak_live_{n:043d}" for n in range(4)]
    settings = {"address_rate_limit_rps": 0.01, "address_rate_limit_burst": 2}
    async with keys_gateway(start_gateway, **settings) as (gw, users):
        answers = [await gw.get("/orders", headers=bearer(key)) for key in made_up]

    assert [a.status_code for a in answers] == [401, 401, 429, 429]
    assert answers[-1].headers["ratelimit-policy"] == '"address";q=2;w=200'
    assert len(users.asked) == 2


async def test_with_users_service_unreachable_a_key_is_503_where_a_credential_is_required(
    start_echo_gateway: StartGateway,
) -> None:
    # users-service's URL refuses connections (the isolated default); orders and books echo.
    async with start_echo_gateway("orders", "books") as gw:
        required = await gw.get("/orders", headers=bearer(KEY))
        public = await gw.post("/graphql", json={}, headers=bearer(KEY))

    assert required.status_code == 503
    assert required.json()["error"]["code"] == "UNAVAILABLE"
    assert required.headers["retry-after"] == "1"
    assert public.status_code == 200  # its service decides (it asks users-service too)


async def test_the_key_routes_reach_users_service_and_need_a_credential(
    start_gateway: StartGateway, signer: TestSigner
) -> None:
    token = bearer(signer.token(OWNER))
    async with keys_gateway(start_gateway) as (gw, users):
        listed = await gw.get("/api/api-keys?limit=5", headers=token)
        created = await gw.post("/api/api-keys", json={"name": "x"}, headers=token)
        deleted = await gw.delete(f"/api/api-keys/{KEY_IDS[KEY]}", headers=token)
        current = await gw.get("/api/api-keys/current", headers=bearer(KEY))
        anonymous = await gw.get("/api/api-keys")

    for response, method in ((listed, "GET"), (created, "POST"), (deleted, "DELETE")):
        assert response.status_code == 200, response.text
        assert response.json()["upstream"] == "users"
        assert response.json()["method"] == method
    assert listed.json()["target"] == "/api/api-keys?limit=5"
    assert current.status_code == 200
    assert current.json()["data"]["id"] == KEY_IDS[KEY]
    assert anonymous.status_code == 401
    # The gateway's question, then the forwarded request itself (kept answers serve the rest).
    assert users.asked == [f"Bearer {KEY}", f"Bearer {KEY}"]
