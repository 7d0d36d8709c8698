"""Account attacks of issue #39, performed through the gateway against the process stack.

- A squatter signs up with someone else's address, never verifies it, and sets up what a
  thief would keep: an API key, a webhook endpoint on a receiver of theirs, an event stream.
  The address's owner takes the account back with a password reset, read from the stack's
  real mail catcher (docs/api.md#email-verification-and-password-reset): the squatter keeps
  nothing (the key refused within STANDING_CACHE_S, the endpoint disabled with
  ``account-claimed`` and sent nothing of the owner's, the stream ended, their name gone).
- A token whose login is not recent mints no key without the password, and a key mints no
  key that outlives it (docs/api.md#api-keys). Such a token is the one users-service issues
  for a session logged in an hour ago: the stack's own key signs its claims with the login
  moved back, as the operator's clock would have it.
- A verification link mailed before the email changed stays dead when the account takes
  that address back (A → B → A).

``processes``: the mail catcher's HTTP API, the signing key file and the webhook receiver on
loopback are the process stack's.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from httpx_sse import EventSource, ServerSentEvent, aconnect_sse

from api_testkit.actors import PASSWORD, log_in, new_email, sign_up
from api_testkit.api_keys import create_key, key_headers
from api_testkit.callers import bearer
from api_testkit.events import eventually
from api_testkit.mailbox import Mailbox, token_of
from api_testkit.orders import place
from api_testkit.stack import Stack
from api_testkit.webhooks import webhook_receiver

pytestmark = [pytest.mark.processes, pytest.mark.usefixtures("every_service_survives")]

STREAM_TIMEOUT_S = 30.0  # a bound on waits through the whole stack, not a figure
OWNERS_PASSWORD = "the owner's own passphrase"


@pytest.fixture
def mailbox(stack: Stack) -> Mailbox:
    return Mailbox(stack.mail_url)


async def _read_until_closed(source: EventSource, seen: list[ServerSentEvent]) -> None:
    """Every event of the stream until the server ends it."""
    async for sse in source.aiter_sse():
        if sse.data:
            seen.append(sse)


async def test_a_claimed_account_leaves_its_squatter_nothing(
    gateway: httpx.AsyncClient, stack: Stack, mailbox: Mailbox
) -> None:
    email = new_email("claimed")
    squatter = await sign_up(gateway, name="Mallory", email=email, password=PASSWORD)
    squatters = bearer((await log_in(gateway, email))["accessToken"])
    key = await create_key(
        gateway, squatters, "users:read", "orders:read", "events:read", name="exfiltrate"
    )
    async with (
        webhook_receiver() as receiver,
        aconnect_sse(
            gateway,
            "GET",
            "/api/events/stream",
            headers=key_headers(key),
            timeout=httpx.Timeout(STREAM_TIMEOUT_S),
        ) as stream,
    ):
        assert stream.response.status_code == 200, await stream.response.aread()
        seen: list[ServerSentEvent] = []
        reading = asyncio.create_task(_read_until_closed(stream, seen))
        registered = await gateway.post(
            "/api/webhooks",
            json={"url": receiver.url("squatter"), "eventTypes": ["orders.order.*"]},
            headers=squatters,
        )
        assert registered.status_code == 201, registered.text
        endpoint = registered.json()["data"]
        before = await place(gateway, squatters)  # the channel works while they hold it
        assert before.status_code == 201, before.text
        await receiver.wait_for("squatter", 1)

        # The owner of the address asks for a reset and follows the link the catcher got.
        asked = await gateway.post("/api/password-reset-requests", json={"email": email})
        assert asked.status_code == 202, asked.text
        _, reset_message = await mailbox.wait_for(email, 2)
        reset = await gateway.post(
            "/api/password-resets",
            json={"token": token_of(reset_message, "/reset-password"), "password": OWNERS_PASSWORD},
        )
        assert reset.status_code == 204, reset.text

        # The squatter's stream ends as webhooks-service reads users.user.claimed.
        await asyncio.wait_for(reading, STREAM_TIMEOUT_S)
        assert all(sse.event != "users.user.claimed" for sse in seen), seen
        owner = bearer((await log_in(gateway, email, OWNERS_PASSWORD))["accessToken"])

        async def disabled() -> bool:
            shown = await gateway.get(f"/api/webhooks/{endpoint['id']}", headers=owner)
            return bool(shown.json()["data"]["enabled"] is False)

        await eventually(disabled, "the squatter's endpoint disabled")
        shown = (await gateway.get(f"/api/webhooks/{endpoint['id']}", headers=owner)).json()
        assert shown["data"]["disabledReason"] == "account-claimed"

        # The owner's new order is logged (its deliveries were decided before that) and
        # reaches no endpoint of the squatter's.
        placed = await place(gateway, owner)
        assert placed.status_code == 201, placed.text
        order_id = placed.json()["data"]["id"]

        async def logged() -> bool:
            events = await gateway.get("/api/events", params={"subject": order_id}, headers=owner)
            return bool(events.json()["data"])

        await eventually(logged, "the owner's order in the event log")
        assert [r.event["subject"] for r in receiver.received["squatter"]] == [
            before.json()["data"]["id"]
        ]
        deliveries = await gateway.get(f"/api/webhooks/{endpoint['id']}/deliveries", headers=owner)
        assert order_id not in {d["subject"] for d in deliveries.json()["data"]}

    await asyncio.sleep(stack.standing_cache_s)  # what the gateway and services keep of the key
    for path in ("/orders", "/api/users/me", f"/api/users/{squatter['id']}", "/api/events"):
        refused = await gateway.get(path, headers=key_headers(key))
        assert refused.status_code == 401, (path, refused.text)
    me = (await gateway.get("/api/users/me", headers=owner)).json()["data"]
    assert (me["name"], me["emailVerified"]) == (email.split("@")[0].lower(), True)
    keys = await gateway.get("/api/api-keys", headers=owner)
    assert keys.json()["data"] == []
    notice = (await mailbox.wait_for(email, 3))[2]
    assert notice["Subject"] == "Your account is yours"
    assert "Mallory" not in notice["Text"] + notice["HTML"]


def _resigned(token: str, key: Ed25519PrivateKey, **claims: Any) -> str:
    """``token`` with ``claims`` changed (None drops one), signed by users-service's key."""
    decoded = jwt.decode(token, options={"verify_signature": False})
    decoded.update(claims)
    decoded = {name: value for name, value in decoded.items() if value is not None}
    kid = jwt.get_unverified_header(token)["kid"]
    return jwt.encode(decoded, key, algorithm="EdDSA", headers={"kid": kid})


async def test_a_key_needs_a_recent_login_and_never_outlives_what_made_it(
    gateway: httpx.AsyncClient, signing_key: Ed25519PrivateKey
) -> None:
    email = new_email("sudo")
    await sign_up(gateway, email=email, password=PASSWORD)
    token = (await log_in(gateway, email))["accessToken"]
    logged_in_at = jwt.decode(token, options={"verify_signature": False})["auth_time"]
    an_hour_ago = _resigned(token, signing_key, auth_time=logged_in_at - 3600)
    before_auth_time = _resigned(token, signing_key, auth_time=None)
    body = {"name": "all of it", "scopes": ["orders:read", "users:write", "api-keys:write"]}

    for stale in (an_hour_ago, before_auth_time):
        refused = await gateway.post("/api/api-keys", json=body, headers=bearer(stale))
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == "REAUTHENTICATION_REQUIRED"
        assert "currentPassword" in refused.json()["error"]["message"]
    confirmed = await gateway.post(
        "/api/api-keys", json={**body, "currentPassword": PASSWORD}, headers=bearer(an_hour_ago)
    )
    assert confirmed.status_code == 201, confirmed.text

    # A key that expires in two minutes mints nothing that lives longer.
    soon = (datetime.now(UTC) + timedelta(minutes=2)).replace(microsecond=0)
    parent = await gateway.post(
        "/api/api-keys",
        json={
            "name": "short",
            "scopes": ["orders:read", "api-keys:write"],
            "expiresAt": soon.isoformat(),
        },
        headers=bearer(token),
    )
    assert parent.status_code == 201, parent.text
    as_parent = key_headers(parent.json()["data"])
    child = await gateway.post(
        "/api/api-keys", json={"name": "child", "scopes": ["orders:read"]}, headers=as_parent
    )
    assert child.status_code == 201, child.text
    assert datetime.fromisoformat(child.json()["data"]["expiresAt"]) <= soon
    for expiry in ((soon + timedelta(days=30)).isoformat(), None):
        outliving = await gateway.post(
            "/api/api-keys",
            json={"name": "forever", "scopes": ["orders:read"], "expiresAt": expiry},
            headers=as_parent,
        )
        assert outliving.status_code == 400, outliving.text
        assert set(outliving.json()["error"]["fields"]) == {"expiresAt"}

    # Nobody's key lives past the maximum lifetime (a year by default), nor for ever.
    for expiry in ((datetime.now(UTC) + timedelta(days=400)).isoformat(), None):
        too_long = await gateway.post(
            "/api/api-keys",
            json={"name": "forever", "scopes": ["orders:read"], "expiresAt": expiry},
            headers=bearer(token),
        )
        assert too_long.status_code == 400, too_long.text
        assert set(too_long.json()["error"]["fields"]) == {"expiresAt"}
    names = [
        k["name"]
        for k in (await gateway.get("/api/api-keys", headers=bearer(token))).json()["data"]
    ]
    assert sorted(names) == ["all of it", "child", "short"]


async def test_a_verification_link_stays_dead_when_the_address_comes_back(
    gateway: httpx.AsyncClient, mailbox: Mailbox
) -> None:
    first, elsewhere = new_email("a-b-a"), new_email("elsewhere")
    user = await sign_up(gateway, email=first, password=PASSWORD)
    [mailed_first] = await mailbox.wait_for(first, 1)
    headers = bearer((await log_in(gateway, first))["accessToken"])

    for address in (elsewhere, first):  # A → B → A
        moved = await gateway.patch(
            f"/api/users/{user['id']}",
            json={"email": address, "currentPassword": PASSWORD},
            headers=headers,
        )
        assert moved.status_code == 200, moved.text
    _, mailed_again = await mailbox.wait_for(first, 2)

    revived = await gateway.post(
        "/api/email-verifications", json={"token": token_of(mailed_first, "/verify-email")}
    )
    assert revived.status_code == 400, revived.text
    assert revived.json()["error"]["fields"]["token"].startswith("is invalid, used or expired")
    current = await gateway.post(
        "/api/email-verifications", json={"token": token_of(mailed_again, "/verify-email")}
    )
    assert current.status_code == 204, current.text
