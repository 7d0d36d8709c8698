"""Sessions over HTTP on the real database: rotation, reuse, the race, logout, the sessions
list, suspension, the caller check. The server runs in this process (conftest), so the ORM
is open here too (for the purge and for looking at rows)."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import jwt
import pytest

from api_testkit import actors
from api_testkit.callers import bearer
from api_testkit.sessions import assert_invalid_credentials, refresh, rotate
from users_service.models import RefreshToken, Session, User
from users_service.sessions.repository import SessionRepository

NewAccount = Any  # the conftest fixture: async (role=..., name=...) -> Account
Account = Any
RACERS = 8


def sid_of(access_token: str) -> str:
    sid: str = jwt.decode(access_token, options={"verify_signature": False})["sid"]
    return sid


async def log_in(client: httpx.AsyncClient, account: Account, **headers: str) -> dict[str, Any]:
    return await actors.log_in(client, account.email, account.password, **headers)


async def test_login_returns_a_refresh_token_stored_only_as_its_hash(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()

    tokens = await log_in(client, me)

    assert tokens["expiresIn"] == 900
    assert tokens["refreshExpiresIn"] == 30 * 24 * 3600
    stored = await RefreshToken.filter(session_id=sid_of(tokens["accessToken"])).all()
    assert [row.token_hash for row in stored] == [
        hashlib.sha256(tokens["refreshToken"].encode()).hexdigest()
    ]


async def test_refresh_rotates_and_a_replay_ends_the_session_for_everyone(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    first = await log_in(client, me)
    chain = await rotate(client, first, 3)
    assert {sid_of(pair["accessToken"]) for pair in chain} == {sid_of(first["accessToken"])}
    latest = chain[-1]
    assert (await client.get("/api/users/me", headers=bearer(latest["accessToken"]))).is_success

    assert_invalid_credentials(await refresh(client, first["refreshToken"]))

    assert_invalid_credentials(await refresh(client, latest["refreshToken"]))
    me_now = await client.get("/api/users/me", headers=bearer(latest["accessToken"]))
    assert me_now.status_code == 401
    assert me_now.headers["www-authenticate"].startswith("Bearer")
    session = await Session.get(id=sid_of(first["accessToken"]))
    assert session.revoked_at is not None


async def test_of_concurrent_refreshes_with_one_token_exactly_one_wins(
    base_url: str, new_account: NewAccount
) -> None:
    me = await new_account()
    async with httpx.AsyncClient(base_url=base_url) as client:
        tokens = await log_in(client, me)

    async def racer() -> httpx.Response:
        # A connection each: the requests really are in flight together.
        async with httpx.AsyncClient(base_url=base_url) as own:
            return await refresh(own, tokens["refreshToken"])

    responses = await asyncio.gather(*(racer() for _ in range(RACERS)))

    statuses = sorted(response.status_code for response in responses)
    assert statuses == [200] + [401] * (RACERS - 1)
    session_tokens = RefreshToken.filter(session_id=sid_of(tokens["accessToken"]))
    assert await session_tokens.count() == 2  # the one presented, and the winner's successor
    assert await session_tokens.filter(spent_at__not_isnull=True).count() == 1
    # The losers presented a spent token: indistinguishable from theft, the session ends.
    [winner] = [r.json()["data"] for r in responses if r.status_code == 200]
    async with httpx.AsyncClient(base_url=base_url) as client:
        assert_invalid_credentials(await refresh(client, winner["refreshToken"]))


async def test_the_repository_lets_exactly_one_of_concurrent_spends_win(
    new_account: NewAccount, client: httpx.AsyncClient
) -> None:
    me = await new_account()
    tokens = await log_in(client, me)
    session_id = uuid.UUID(sid_of(tokens["accessToken"]))
    token_hash = hashlib.sha256(tokens["refreshToken"].encode()).hexdigest()
    repository = SessionRepository()
    now = datetime.now(UTC)

    async def spend() -> str:
        async with repository.atomic():
            outcome = await repository.spend(token_hash, session_id, now)
            await asyncio.sleep(0.05)  # hold the transaction open while the others wait
            return outcome.value

    outcomes = sorted(await asyncio.gather(*(spend() for _ in range(RACERS))))

    assert outcomes == ["already spent"] * (RACERS - 1) + ["spent"]


async def test_logout_ends_the_session_and_an_unknown_token_is_still_204(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    tokens, other = await log_in(client, me), await log_in(client, me)

    for token in (tokens["refreshToken"], "not-a-token", f"{uuid.uuid4().hex}.{'A' * 43}"):
        response = await client.post("/api/auth/logout", json={"refreshToken": token})
        assert response.status_code == 204
        assert response.content == b""

    assert_invalid_credentials(await refresh(client, tokens["refreshToken"]))
    stale = await client.get("/api/users/me", headers=bearer(tokens["accessToken"]))
    assert stale.status_code == 401
    assert (await refresh(client, other["refreshToken"])).status_code == 200


async def test_logout_everywhere_ends_every_session_of_the_caller(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me, someone = await new_account(), await new_account()
    mine = [await log_in(client, me) for _ in range(3)]
    theirs = await log_in(client, someone)

    response = await client.post("/api/auth/logout-all", headers=bearer(mine[0]["accessToken"]))

    assert response.status_code == 204
    for tokens in mine:
        assert_invalid_credentials(await refresh(client, tokens["refreshToken"]))
        me_now = await client.get("/api/users/me", headers=bearer(tokens["accessToken"]))
        assert me_now.status_code == 401
    assert (await refresh(client, theirs["refreshToken"])).status_code == 200
    assert (await client.post("/api/auth/logout-all")).status_code == 401


@pytest.mark.parametrize(
    "body",
    [{}, {"refreshToken": 5}, {"refreshToken": None}, {"refreshToken": "x", "extra": 1}],
    ids=["missing", "number", "null", "unknown-field"],
)
async def test_a_malformed_refresh_or_logout_body_is_400(
    client: httpx.AsyncClient, body: dict[str, Any]
) -> None:
    for path in ("/api/auth/refresh", "/api/auth/logout"):
        response = await client.post(path, json=body)
        assert response.status_code == 400, response.text
        assert response.json()["error"]["code"] == "VALIDATION_FAILED"


async def test_the_sessions_list_shows_the_callers_open_sessions_and_one_can_be_ended(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me, someone = await new_account(), await new_account()
    await client.post("/api/auth/logout-all", headers=me.headers)  # the fixture's login
    phone = await log_in(client, me, **{"User-Agent": "phone/1.0", "X-Real-IP": "203.0.113.9"})
    laptop = await log_in(client, me, **{"User-Agent": "laptop/2.0"})
    theirs = await log_in(client, someone)

    response = await client.get("/api/auth/sessions", headers=bearer(laptop["accessToken"]))

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["page"] == {"total": 2, "limit": 20, "offset": 0}
    by_agent = {item["userAgent"]: item for item in body["data"]}
    assert set(by_agent) == {"phone/1.0", "laptop/2.0"}
    assert by_agent["phone/1.0"]["address"] == "203.0.113.9"
    assert by_agent["laptop/2.0"]["address"] == "127.0.0.1"
    assert by_agent["laptop/2.0"]["current"] is True
    assert by_agent["phone/1.0"]["current"] is False
    assert set(by_agent["phone/1.0"]) == {
        "id", "createdAt", "lastUsedAt", "expiresAt", "userAgent", "address", "current"
    }  # fmt: skip

    other_id = sid_of(theirs["accessToken"])
    for missing in (other_id, str(uuid.uuid4()), "not-a-uuid"):
        gone = await client.delete(
            f"/api/auth/sessions/{missing}", headers=bearer(laptop["accessToken"])
        )
        assert gone.status_code == 404
    assert (await refresh(client, theirs["refreshToken"])).status_code == 200

    phone_id = sid_of(phone["accessToken"])
    ended = await client.delete(
        f"/api/auth/sessions/{phone_id}", headers=bearer(laptop["accessToken"])
    )
    assert ended.status_code == 204
    assert_invalid_credentials(await refresh(client, phone["refreshToken"]))
    listed = await client.get(
        "/api/auth/sessions?sort=createdAt&limit=5", headers=bearer(laptop["accessToken"])
    )
    assert [item["id"] for item in listed.json()["data"]] == [sid_of(laptop["accessToken"])]
    bad = await client.get("/api/auth/sessions?userId=x", headers=bearer(laptop["accessToken"]))
    assert bad.json()["error"]["code"] == "BAD_FILTER"


async def test_changing_ones_password_ends_ones_other_sessions(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    here, elsewhere = await log_in(client, me), await log_in(client, me)

    changed = await client.patch(
        f"/api/users/{me.id}",
        json={"password": "a-brand-new-password", "currentPassword": me.password},
        headers=bearer(here["accessToken"]),
    )

    assert changed.status_code == 200, changed.text
    assert (await client.get("/api/users/me", headers=bearer(here["accessToken"]))).is_success
    assert (await refresh(client, here["refreshToken"])).status_code == 200
    assert_invalid_credentials(await refresh(client, elsewhere["refreshToken"]))
    stale = await client.get("/api/users/me", headers=bearer(elsewhere["accessToken"]))
    assert stale.status_code == 401


async def test_me_is_the_callers_user(client: httpx.AsyncClient, new_account: NewAccount) -> None:
    me = await new_account(name="Myself")

    response = await client.get("/api/users/me", headers=me.headers)

    assert response.status_code == 200
    assert response.json()["data"]["id"] == me.id
    assert response.json()["data"]["name"] == "Myself"
    assert response.json()["data"]["isActive"] is True
    assert (await client.get("/api/users/me")).status_code == 401


async def test_suspension_refuses_the_account_everywhere_until_it_is_lifted(
    client: httpx.AsyncClient, admin: Account, new_account: NewAccount
) -> None:
    user = await new_account()
    tokens = await log_in(client, user)

    suspended = await client.patch(
        f"/api/users/{user.id}", json={"isActive": False}, headers=admin.headers
    )

    assert suspended.status_code == 200, suspended.text
    assert suspended.json()["data"]["isActive"] is False
    wrong = await client.post(
        "/api/auth/token", json={"email": user.email, "password": "not-the-password"}
    )
    assert_invalid_credentials(wrong)  # without the password, nothing is revealed
    right = await client.post(
        "/api/auth/token", json={"email": user.email, "password": user.password}
    )
    assert right.status_code == 403
    assert "suspended" in right.json()["error"]["message"]
    again = await refresh(client, tokens["refreshToken"])
    assert again.status_code == 403
    me_now = await client.get("/api/users/me", headers=bearer(tokens["accessToken"]))
    assert me_now.status_code == 403
    assert await Session.filter(user_id=user.id, revoked_at=None).count() == 0
    listed = await client.get("/api/users?isActive=false&limit=100", headers=admin.headers)
    assert user.id in [item["id"] for item in listed.json()["data"]]
    assert all(item["isActive"] is False for item in listed.json()["data"])

    lifted = await client.patch(
        f"/api/users/{user.id}", json={"isActive": True}, headers=admin.headers
    )

    assert lifted.json()["data"]["isActive"] is True
    back = await log_in(client, user)
    assert (await client.get("/api/users/me", headers=bearer(back["accessToken"]))).is_success
    # Old sessions stay ended.
    assert_invalid_credentials(await refresh(client, tokens["refreshToken"]))


async def test_only_an_admin_suspends_and_not_themselves(
    client: httpx.AsyncClient, admin: Account, new_account: NewAccount
) -> None:
    user = await new_account()

    by_user = await client.patch(
        f"/api/users/{user.id}", json={"isActive": False}, headers=user.headers
    )
    by_self = await client.patch(
        f"/api/users/{admin.id}", json={"isActive": False}, headers=admin.headers
    )
    null = await client.patch(
        f"/api/users/{user.id}", json={"isActive": None}, headers=admin.headers
    )

    assert (by_user.status_code, by_self.status_code, null.status_code) == (403, 403, 400)
    assert await User.filter(id__in=[user.id, admin.id], is_active=False).count() == 0


async def test_the_is_active_filter_totals_are_exact(
    client: httpx.AsyncClient, admin: Account, new_account: NewAccount
) -> None:
    user = await new_account()
    await client.patch(f"/api/users/{user.id}", json={"isActive": False}, headers=admin.headers)

    reported = {}
    for query in ("isActive=true", "isActive=false", "isActive=false&role=customer"):
        response = await client.get(f"/api/users?limit=1&{query}", headers=admin.headers)
        assert response.status_code == 200, response.text
        reported[query] = response.json()["page"]["total"]

    assert reported == {
        "isActive=true": await User.filter(is_active=True).count(),
        "isActive=false": await User.filter(is_active=False).count(),
        "isActive=false&role=customer": await User.filter(is_active=False, role="customer").count(),
    }
    assert reported["isActive=false"] >= 1
    bad = await client.get("/api/users?isActive=yes", headers=admin.headers)
    assert bad.status_code == 400
    assert bad.json()["error"]["fields"] == {"isActive": "must be one of: true, false"}


async def test_deleting_a_user_ends_their_sessions(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    tokens = await log_in(client, me)

    gone = await client.request(
        "DELETE", f"/api/users/{me.id}", json={"currentPassword": me.password}, headers=me.headers
    )
    assert gone.status_code == 204

    assert await Session.filter(user_id=me.id).count() == 0
    assert_invalid_credentials(await refresh(client, tokens["refreshToken"]))


async def test_the_purge_deletes_ended_and_expired_sessions_and_keeps_the_open_ones(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    ended, expired, live = [await log_in(client, me) for _ in range(3)]
    await client.post("/api/auth/logout", json={"refreshToken": ended["refreshToken"]})
    past = datetime.now(UTC) - timedelta(seconds=1)
    await Session.filter(id=sid_of(expired["accessToken"])).update(expires_at=past)

    purged = await SessionRepository().purge(datetime.now(UTC))

    assert purged >= 2
    remaining = {str(s.id) for s in await Session.filter(user_id=me.id)}
    assert sid_of(live["accessToken"]) in remaining
    assert sid_of(ended["accessToken"]) not in remaining
    assert sid_of(expired["accessToken"]) not in remaining
    assert await RefreshToken.filter(session_id=sid_of(ended["accessToken"])).count() == 0
    assert (await refresh(client, live["refreshToken"])).status_code == 200
