"""API keys over HTTP on the real database: making one (its secret shown once, its hash
stored), using it within its scopes, and every way it stops working (revoked, expired, its
owner suspended or deleted). The server runs in this process (conftest), so the ORM is open
here too, for looking at rows and moving a key's clock."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import jwt

from api_shared.auth import API_KEY_PATTERN
from api_testkit.callers import bearer
from users_service.models import ApiKey, Session

NewAccount = Any  # the conftest fixture: async (role=..., name=...) -> Account
Account = Any
KEY_REFUSED = "This API key is not valid: it is unknown, revoked or expired."


async def create_key(
    client: httpx.AsyncClient, headers: dict[str, str], *scopes: str, **body: Any
) -> dict[str, Any]:
    response = await client.post(
        "/api/api-keys", json={"name": "a script", "scopes": list(scopes), **body}, headers=headers
    )
    assert response.status_code == 201, response.text
    key: dict[str, Any] = response.json()["data"]
    return key


def assert_refused(response: httpx.Response) -> None:
    assert response.status_code == 401, response.text
    assert response.json()["error"]["code"] == "UNAUTHENTICATED"
    assert response.headers["www-authenticate"].startswith("Bearer")


def assert_lacks_scope(response: httpx.Response, scope: str) -> None:
    assert response.status_code == 403, response.text
    assert response.json()["error"]["code"] == "FORBIDDEN"
    assert scope in response.json()["error"]["message"]
    assert response.headers["www-authenticate"] == (
        f'Bearer error="insufficient_scope", scope="{scope}"'
    )


async def test_a_new_key_shows_its_secret_once_and_is_stored_as_its_hash(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()

    response = await client.post(
        "/api/api-keys",
        json={"name": "back office", "scopes": ["users:read", "orders:read"]},
        headers=me.headers,
    )
    listed = await client.get("/api/api-keys", headers=me.headers)

    assert response.status_code == 201, response.text
    key = response.json()["data"]
    assert response.headers["location"] == f"/api/api-keys/{key['id']}"
    assert response.headers["cache-control"] == "no-store"
    assert API_KEY_PATTERN.fullmatch(key["secret"])
    assert key["prefix"] == key["secret"][:12]
    assert key["scopes"] == ["orders:read", "users:read"]  # sorted
    assert key["owner"] == {"id": me.id, "role": "customer"}
    # No expiresAt asked for: the longest allowed, API_KEY_MAX_LIFETIME_S (a year) away.
    expires_at = datetime.fromisoformat(key["expiresAt"])
    assert abs(expires_at - (datetime.now(UTC) + timedelta(days=365))) < timedelta(minutes=1)
    assert key["lastUsedAt"] is None
    stored = await ApiKey.get(id=key["id"])
    assert stored.secret_hash == hashlib.sha256(key["secret"].encode()).hexdigest()
    assert listed.status_code == 200, listed.text
    assert listed.json()["page"] == {"total": 1, "limit": 20, "offset": 0}
    shown = listed.json()["data"][0]
    assert shown["id"] == key["id"]
    assert shown["prefix"] == key["prefix"]
    assert "secret" not in shown
    assert "secretHash" not in shown
    assert key["secret"] not in listed.text
    assert stored.secret_hash not in listed.text


async def test_a_key_with_users_read_reads_its_owner_and_marks_its_use(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    key = await create_key(client, me.headers, "users:read")

    first = await client.get("/api/users/me", headers=bearer(key["secret"]))
    second = await client.get(f"/api/users/{me.id}", headers=bearer(key["secret"]))
    used_at = (await ApiKey.get(id=key["id"])).last_used_at

    assert first.status_code == 200, first.text
    assert first.json()["data"]["id"] == me.id
    assert second.status_code == 200, second.text
    assert used_at is not None
    assert abs(datetime.now(UTC) - used_at) < timedelta(minutes=1)


async def test_last_used_is_written_at_most_once_a_minute(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    key = await create_key(client, me.headers, "users:read")
    recent = datetime.now(UTC) - timedelta(seconds=30)
    await ApiKey.filter(id=key["id"]).update(last_used_at=recent)

    await client.get("/api/users/me", headers=bearer(key["secret"]))
    kept = (await ApiKey.get(id=key["id"])).last_used_at
    await ApiKey.filter(id=key["id"]).update(last_used_at=recent - timedelta(minutes=1))
    await client.get("/api/users/me", headers=bearer(key["secret"]))
    moved = (await ApiKey.get(id=key["id"])).last_used_at

    assert kept == recent
    assert moved is not None
    assert moved > recent


async def test_a_key_without_users_read_is_refused_naming_the_scope(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    key = bearer((await create_key(client, me.headers, "orders:read"))["secret"])

    assert_lacks_scope(await client.get("/api/users/me", headers=key), "users:read")
    assert_lacks_scope(await client.get(f"/api/users/{me.id}", headers=key), "users:read")
    assert_lacks_scope(
        await client.patch(f"/api/users/{me.id}", json={"name": "Mallory"}, headers=key),
        "users:write",
    )
    assert_lacks_scope(await client.get("/api/api-keys", headers=key), "api-keys:read")
    assert_lacks_scope(
        await client.post(
            "/api/api-keys", json={"name": "x", "scopes": ["orders:read"]}, headers=key
        ),
        "api-keys:write",
    )


async def test_a_key_never_does_what_is_a_persons(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    key = bearer((await create_key(client, me.headers, "users:read", "users:write"))["secret"])

    renamed = await client.patch(f"/api/users/{me.id}", json={"name": "Renamed"}, headers=key)
    refused = [
        await client.patch(
            f"/api/users/{me.id}",
            json={"password": "a-new-password", "currentPassword": me.password},
            headers=key,
        ),
        await client.patch(
            f"/api/users/{me.id}",
            json={
                "email": f"new-{uuid.uuid4().hex[:8]}@example.com",
                "currentPassword": me.password,
            },
            headers=key,
        ),
        await client.request(
            "DELETE", f"/api/users/{me.id}", json={"currentPassword": me.password}, headers=key
        ),
        await client.get("/api/auth/sessions", headers=key),
        await client.delete("/api/auth/sessions", headers=key),
        await client.post("/api/auth/logout-all", headers=key),
        await client.post("/api/email-verification-requests", headers=key),
    ]
    still = await client.get("/api/users/me", headers=me.headers)

    assert renamed.status_code == 200, renamed.text
    for response in refused:
        assert response.status_code == 403, response.text
        assert "not an API key" in response.json()["error"]["message"]
    assert still.status_code == 200  # the account, its email and its sessions are intact
    assert still.json()["data"]["email"] == me.email


async def test_revoked_expired_and_malformed_keys_are_refused(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    revoked = await create_key(client, me.headers, "users:read")
    expiring = await create_key(
        client,
        me.headers,
        "users:read",
        expiresAt=(datetime.now(UTC) + timedelta(hours=1)).isoformat(),
    )

    deleted = await client.delete(f"/api/api-keys/{revoked['id']}", headers=me.headers)
    await ApiKey.filter(id=expiring["id"]).update(
        expires_at=datetime.now(UTC) - timedelta(seconds=1)
    )

    assert deleted.status_code == 204, deleted.text
    for secret in (revoked["secret"], expiring["secret"]):
        response = await client.get("/api/users/me", headers=bearer(secret))
        assert_refused(response)
        assert response.json()["error"]["message"] == KEY_REFUSED
    for malformed in ("ak_live_short", "ak_test_" + "a" * 43, revoked["secret"] + "x"):
        assert_refused(await client.get("/api/users/me", headers=bearer(malformed)))


async def test_a_suspended_owners_key_is_forbidden_and_a_deleted_owners_refused(
    client: httpx.AsyncClient, new_account: NewAccount, admin: Account
) -> None:
    suspended, deleted = await new_account(), await new_account()
    suspended_key = await create_key(client, suspended.headers, "users:read")
    deleted_key = await create_key(client, deleted.headers, "users:read")

    await client.patch(
        f"/api/users/{suspended.id}", json={"isActive": False}, headers=admin.headers
    )
    gone = await client.delete(f"/api/users/{deleted.id}", headers=admin.headers)
    forbidden = await client.get("/api/users/me", headers=bearer(suspended_key["secret"]))
    current = await client.get("/api/api-keys/current", headers=bearer(suspended_key["secret"]))
    refused = await client.get("/api/users/me", headers=bearer(deleted_key["secret"]))

    assert gone.status_code == 204, gone.text
    for response in (forbidden, current):
        assert response.status_code == 403, response.text
        assert response.json()["error"]["message"] == "This account is suspended."
    assert_refused(refused)
    assert not await ApiKey.exists(id=deleted_key["id"])  # the owner's row took it along


async def test_a_key_cannot_create_a_key_with_more_scopes_than_itself(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    key = bearer((await create_key(client, me.headers, "api-keys:write", "orders:read"))["secret"])

    wider = await client.post(
        "/api/api-keys",
        json={"name": "wider", "scopes": ["orders:read", "orders:write", "users:write"]},
        headers=key,
    )
    narrower = await client.post(
        "/api/api-keys", json={"name": "narrower", "scopes": ["orders:read"]}, headers=key
    )
    names = [
        str(name) for name in await ApiKey.filter(user_id=me.id).values_list("name", flat=True)
    ]

    assert wider.status_code == 403, wider.text
    message = wider.json()["error"]["message"]
    assert "'orders:write'" in message
    assert "'users:write'" in message
    assert "'orders:read'" not in message
    assert narrower.status_code == 201, narrower.text
    assert narrower.json()["data"]["scopes"] == ["orders:read"]
    assert sorted(names) == ["a script", "narrower"]  # nothing made by the refused request


async def test_current_describes_the_key_and_is_404_for_an_access_token(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    key = await create_key(client, me.headers, "orders:read")

    itself = await client.get("/api/api-keys/current", headers=bearer(key["secret"]))
    with_token = await client.get("/api/api-keys/current", headers=me.headers)

    assert itself.status_code == 200, itself.text
    data = itself.json()["data"]
    assert data["id"] == key["id"]
    assert data["scopes"] == ["orders:read"]
    assert data["owner"] == {"id": me.id, "role": "customer"}
    assert "secret" not in data
    assert with_token.status_code == 404, with_token.text
    assert with_token.json()["error"]["code"] == "NOT_FOUND"
    assert with_token.json()["error"]["message"] == (
        "This request is not authenticated by an API key."
    )


async def test_an_admins_key_describes_its_owner_as_admin(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    boss = await new_account("admin")
    key = await create_key(client, boss.headers, "users:read")

    itself = await client.get("/api/api-keys/current", headers=bearer(key["secret"]))
    listed = await client.get("/api/users", headers=bearer(key["secret"]))

    assert itself.json()["data"]["owner"] == {"id": boss.id, "role": "admin"}
    assert listed.status_code == 200, listed.text


async def test_another_users_key_is_404_on_get_and_delete(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    owner, other = await new_account(), await new_account()
    key = await create_key(client, owner.headers, "orders:read")

    answers = [
        await client.get(f"/api/api-keys/{key['id']}", headers=other.headers),
        await client.delete(f"/api/api-keys/{key['id']}", headers=other.headers),
        await client.get(f"/api/api-keys/{uuid.uuid4()}", headers=owner.headers),
        await client.get("/api/api-keys/not-a-uuid", headers=owner.headers),
    ]
    own = await client.get(f"/api/api-keys/{key['id']}", headers=owner.headers)

    for response in answers:
        assert response.status_code == 404, response.text
        assert response.json()["error"]["code"] == "NOT_FOUND"
    assert own.status_code == 200
    assert own.json()["data"]["id"] == key["id"]
    assert "secret" not in own.json()["data"]


async def test_a_key_with_api_keys_scopes_manages_its_owners_keys(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    other = await create_key(client, me.headers, "orders:read")
    manager = bearer(
        (await create_key(client, me.headers, "api-keys:read", "api-keys:write"))["secret"]
    )

    listed = await client.get("/api/api-keys?sort=createdAt", headers=manager)
    revoked = await client.delete(f"/api/api-keys/{other['id']}", headers=manager)

    assert listed.status_code == 200, listed.text
    assert [k["name"] for k in listed.json()["data"]] == ["a script", "a script"]
    assert listed.json()["data"][0]["id"] == other["id"]
    assert revoked.status_code == 204, revoked.text


async def test_keys_are_listed_newest_first_and_paged(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    made = [await create_key(client, me.headers, "orders:read", name=f"k{i}") for i in range(3)]
    base = datetime.now(UTC)
    for offset, key in enumerate(made):  # distinct creation times, whatever the clock's grain
        await ApiKey.filter(id=key["id"]).update(created_at=base + timedelta(seconds=offset))

    first = await client.get("/api/api-keys?limit=2", headers=me.headers)
    rest = await client.get("/api/api-keys?limit=2&offset=2", headers=me.headers)
    bad = await client.get("/api/api-keys?sort=name", headers=me.headers)
    unknown = await client.get("/api/api-keys?name=k1", headers=me.headers)

    assert [k["name"] for k in first.json()["data"]] == ["k2", "k1"]
    assert first.json()["page"] == {"total": 3, "limit": 2, "offset": 0}
    assert [k["name"] for k in rest.json()["data"]] == ["k0"]
    assert bad.json()["error"]["code"] == "BAD_SORT"
    assert unknown.json()["error"]["code"] == "BAD_FILTER"


async def test_invalid_bodies_name_their_field(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    cases: dict[str, list[dict[str, Any]]] = {
        "scopes": [
            {"name": "x", "scopes": ["orders:read", "everything"]},
            {"name": "x", "scopes": []},
            {"name": "x", "scopes": ["orders:read", "orders:read"]},
        ],
        "expiresAt": [
            {"name": "x", "scopes": ["orders:read"], "expiresAt": past},
            {"name": "x", "scopes": ["orders:read"], "expiresAt": "2099-01-01"},
            {"name": "x", "scopes": ["orders:read"], "expiresAt": "2099-01-01T00:00:00Z"},
            {"name": "x", "scopes": ["orders:read"], "expiresAt": None},
        ],
        "currentPassword": [{"name": "x", "scopes": ["orders:read"], "currentPassword": None}],
        "name": [
            {"name": " ", "scopes": ["orders:read"]},
            {"name": "n" * 101, "scopes": ["orders:read"]},
        ],
    }

    for field, bodies in cases.items():
        for body in bodies:
            response = await client.post("/api/api-keys", json=body, headers=me.headers)
            assert response.status_code == 400, response.text
            assert response.json()["error"]["code"] == "VALIDATION_FAILED"
            assert field in response.json()["error"]["fields"], response.text
    assert not await ApiKey.exists(user_id=me.id)


async def test_a_user_holds_at_most_fifty_keys(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    now = datetime.now(UTC)
    await ApiKey.bulk_create(
        [
            ApiKey(
                id=uuid.uuid4(),
                user_id=me.id,
                name=f"k{i}",
                prefix="ak_live_xxxx",
                secret_hash=hashlib.sha256(f"{me.id}-{i}".encode()).hexdigest(),
                scopes="orders:read",
                created_at=now,
            )
            for i in range(49)
        ]
    )

    fiftieth = await client.post(
        "/api/api-keys", json={"name": "50", "scopes": ["orders:read"]}, headers=me.headers
    )
    fifty_first = await client.post(
        "/api/api-keys", json={"name": "51", "scopes": ["orders:read"]}, headers=me.headers
    )

    assert fiftieth.status_code == 201, fiftieth.text
    assert fifty_first.status_code == 409, fifty_first.text
    assert fifty_first.json()["error"]["code"] == "INVALID_STATE"
    assert await ApiKey.filter(user_id=me.id).count() == 50


# --- recent authentication, lifetimes, revoking every key -------------------------------------


async def stale_login(client: httpx.AsyncClient, account: Account, minutes: int = 11) -> str:
    """An access token of ``account`` whose login was ``minutes`` ago: its session's login
    moved back in the database (time passing), then a refresh, which keeps that login's
    time in ``auth_time``."""
    login = await client.post(
        "/api/auth/token", json={"email": account.email, "password": account.password}
    )
    refresh_token = login.json()["data"]["refreshToken"]
    session_id = jwt.decode(
        login.json()["data"]["accessToken"], options={"verify_signature": False}
    )["sid"]
    await Session.filter(id=session_id).update(
        created_at=datetime.now(UTC) - timedelta(minutes=minutes)
    )
    refreshed = await client.post(
        "/api/auth/token", json={"grantType": "refresh_token", "refreshToken": refresh_token}
    )
    assert refreshed.status_code == 200, refreshed.text
    token: str = refreshed.json()["data"]["accessToken"]
    return token


async def test_a_login_that_is_not_recent_mints_a_key_only_with_the_password(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    stale = bearer(await stale_login(client, me))
    body = {"name": "late", "scopes": ["orders:read"]}

    refused = await client.post("/api/api-keys", json=body, headers=stale)
    wrong = await client.post(
        "/api/api-keys", json={**body, "currentPassword": "not it"}, headers=stale
    )
    nothing_yet = await ApiKey.filter(user_id=me.id).count()
    confirmed = await client.post(
        "/api/api-keys", json={**body, "currentPassword": me.password}, headers=stale
    )
    fresh = await client.post("/api/api-keys", json=body, headers=me.headers)

    assert refused.status_code == 403, refused.text
    assert refused.json()["error"]["code"] == "REAUTHENTICATION_REQUIRED"
    assert "currentPassword" in refused.json()["error"]["message"]
    assert wrong.status_code == 401, wrong.text
    assert wrong.json()["error"]["code"] == "INVALID_CREDENTIALS"
    assert nothing_yet == 0
    assert confirmed.status_code == 201, confirmed.text
    assert fresh.status_code == 201, fresh.text


async def test_a_child_key_expires_no_later_than_its_parent(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me = await new_account()
    soon = (datetime.now(UTC) + timedelta(minutes=2)).replace(microsecond=0)
    parent = await create_key(
        client, me.headers, "api-keys:write", "orders:read", expiresAt=soon.isoformat()
    )
    as_parent = bearer(parent["secret"])

    child = await client.post(
        "/api/api-keys", json={"name": "child", "scopes": ["orders:read"]}, headers=as_parent
    )
    outliving = [
        await client.post(
            "/api/api-keys",
            json={"name": "child", "scopes": ["orders:read"], "expiresAt": expiry},
            headers=as_parent,
        )
        for expiry in ((soon + timedelta(days=1)).isoformat(), None)
    ]
    with_password = await client.post(
        "/api/api-keys",
        json={"name": "child", "scopes": ["orders:read"], "currentPassword": me.password},
        headers=as_parent,
    )

    assert child.status_code == 201, child.text
    assert datetime.fromisoformat(child.json()["data"]["expiresAt"]) == soon
    for refused in (*outliving, with_password):
        assert refused.status_code == 400, refused.text
    assert [set(r.json()["error"]["fields"]) for r in outliving] == [{"expiresAt"}] * 2
    assert set(with_password.json()["error"]["fields"]) == {"currentPassword"}
    assert await ApiKey.filter(user_id=me.id).count() == 2


async def test_every_key_of_the_caller_is_revoked_at_once(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    me, other = await new_account(), await new_account()
    mine = [await create_key(client, me.headers, "users:read") for _ in range(3)]
    theirs = await create_key(client, other.headers, "users:read")
    stale = bearer(await stale_login(client, me))

    as_key = await client.delete("/api/api-keys", headers=bearer(mine[0]["secret"]))
    not_recent = await client.delete("/api/api-keys", headers=stale)
    kept = await ApiKey.filter(user_id=me.id).count()
    confirmed = await client.request(
        "DELETE", "/api/api-keys", json={"currentPassword": me.password}, headers=stale
    )
    again = await client.delete("/api/api-keys", headers=me.headers)

    assert as_key.status_code == 403, as_key.text
    assert "not an API key" in as_key.json()["error"]["message"]
    assert not_recent.status_code == 403, not_recent.text
    assert not_recent.json()["error"]["code"] == "REAUTHENTICATION_REQUIRED"
    assert kept == 3
    assert (confirmed.status_code, again.status_code) == (204, 204)
    for key in mine:
        assert_refused(await client.get("/api/users/me", headers=bearer(key["secret"])))
    theirs_still = await client.get("/api/users/me", headers=bearer(theirs["secret"]))
    assert theirs_still.status_code == 200, theirs_still.text
