"""CallerCheck against a tiny users-service (aiohttp on loopback) that a test steers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from api_shared.auth.principal import Principal
from api_shared.errors import ForbiddenError, UnauthenticatedError, UnavailableError
from api_shared.http import HttpSession, Replicas
from api_shared.standing import USERS_UNAVAILABLE, CallerCheck
from api_testkit.aiohttp_servers import serving
from api_testkit.http_sessions import open_session
from api_testkit.ports import free_port

SUBJECT = "7c1f4c0e-0000-4000-8000-000000000001"
ADMIN = Principal(SUBJECT, "admin", "session-1")
AUTHORIZATION = "Bearer token-1"


@dataclass
class Users:
    """What ``/api/users/me`` answers next, and the credentials it was asked with."""

    status: int = 200
    body: object = field(
        default_factory=lambda: {"data": {"id": SUBJECT, "role": "admin", "isActive": True}}
    )
    asked: list[str] = field(default_factory=list)
    url: str = ""

    async def me(self, request: web.Request) -> web.Response:
        self.asked.append(request.headers.get("Authorization", ""))
        return web.json_response(self.body, status=self.status)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def users() -> AsyncIterator[Users]:
    users = Users()
    app = web.Application()
    app.router.add_get("/api/users/me", users.me)
    async with serving(app) as users.url:
        yield users


@pytest.fixture
async def http() -> AsyncIterator[HttpSession]:
    async with open_session(timeout_s=1) as session:
        yield session


def check_of(http: HttpSession, urls: list[str], clock: Clock, cache_s: float = 5) -> CallerCheck:
    replicas = Replicas(http, urls, name="users-service", message=USERS_UNAVAILABLE)
    return CallerCheck(replicas, cache_s=cache_s, clock=clock)


async def test_an_admin_still_admin_is_confirmed_with_the_callers_own_token(
    users: Users, http: HttpSession
) -> None:
    check = check_of(http, [users.url], Clock())

    assert await check.confirm(ADMIN, AUTHORIZATION) == ADMIN
    assert users.asked == [AUTHORIZATION]


async def test_a_demoted_admin_comes_back_with_the_role_users_service_gives_now(
    users: Users, http: HttpSession
) -> None:
    users.body = {"data": {"id": SUBJECT, "role": "customer", "isActive": True}}

    confirmed = await check_of(http, [users.url], Clock()).confirm(ADMIN, AUTHORIZATION)

    assert (confirmed.role, confirmed.is_admin) == ("customer", False)
    assert confirmed.subject == SUBJECT


@pytest.mark.parametrize(
    ("status", "error"),
    [(401, UnauthenticatedError), (403, ForbiddenError), (500, UnavailableError)],
)
async def test_users_services_refusal_is_the_callers_and_anything_else_is_unavailable(
    users: Users, http: HttpSession, status: int, error: type[Exception]
) -> None:
    users.status, users.body = status, {"error": {"code": "X", "message": "x"}}

    with pytest.raises(error):
        await check_of(http, [users.url], Clock()).confirm(ADMIN, AUTHORIZATION)


@pytest.mark.parametrize(
    "body",
    [
        {"data": {"id": "someone-else", "role": "admin", "isActive": True}},
        {"data": {"id": SUBJECT, "role": "emperor", "isActive": True}},
        {"data": {"id": SUBJECT, "role": "admin", "isActive": False}},
        {"data": []},
        ["not", "an", "object"],
    ],
)
async def test_an_answer_that_does_not_confirm_this_caller_is_unavailable_never_a_guess(
    users: Users, http: HttpSession, body: object
) -> None:
    users.body = body

    with pytest.raises(UnavailableError):
        await check_of(http, [users.url], Clock()).confirm(ADMIN, AUTHORIZATION)


async def test_an_answer_is_kept_for_the_cache_time_then_asked_again(
    users: Users, http: HttpSession
) -> None:
    clock = Clock()
    check = check_of(http, [users.url], clock, cache_s=5)
    await check.confirm(ADMIN, AUTHORIZATION)

    clock.now = 4.9
    await check.confirm(ADMIN, AUTHORIZATION)
    assert len(users.asked) == 1
    users.status = 403
    clock.now = 5.0
    with pytest.raises(ForbiddenError):
        await check.confirm(ADMIN, AUTHORIZATION)
    assert len(users.asked) == 2


async def test_a_refusal_is_kept_as_briefly_as_a_confirmation(
    users: Users, http: HttpSession
) -> None:
    clock = Clock()
    check = check_of(http, [users.url], clock, cache_s=5)
    users.status = 401
    with pytest.raises(UnauthenticatedError):
        await check.confirm(ADMIN, AUTHORIZATION)
    users.status = 200

    clock.now = 4.9
    with pytest.raises(UnauthenticatedError) as kept:
        await check.confirm(ADMIN, AUTHORIZATION)
    assert len(users.asked) == 1
    clock.now = 5.0
    assert await check.confirm(ADMIN, AUTHORIZATION) == ADMIN
    assert len(users.asked) == 2
    assert kept.value.message == "This token's session has ended; log in again."


async def test_a_zero_cache_keeps_nothing_and_asks_every_time(
    users: Users, http: HttpSession
) -> None:
    check = check_of(http, [users.url], Clock(), cache_s=0)
    users.status = 401
    with pytest.raises(UnauthenticatedError):
        await check.confirm(ADMIN, AUTHORIZATION)
    users.status = 200

    await check.confirm(ADMIN, AUTHORIZATION)
    await check.confirm(ADMIN, AUTHORIZATION)

    assert len(users.asked) == 3


async def test_a_replica_refusing_connections_is_skipped_and_none_answering_is_unavailable(
    users: Users, http: HttpSession
) -> None:
    down = f"http://127.0.0.1:{free_port()}"

    assert await check_of(http, [down, users.url], Clock()).confirm(ADMIN, AUTHORIZATION)
    with pytest.raises(UnavailableError):
        await check_of(http, [down], Clock()).confirm(ADMIN, AUTHORIZATION)


KEY = "ak_live_" + "B" * 43
KEY_DOCUMENT = {
    "data": {
        "id": "3f1e0000-0000-4000-8000-0000000000aa",
        "name": "shop back office",
        "prefix": KEY[:12],
        "scopes": ["orders:read", "orders:write"],
        "owner": {"id": SUBJECT, "role": "customer"},
    }
}


@pytest.fixture
async def key_users() -> AsyncIterator[Users]:
    """users-service answering ``/api/api-keys/current``."""
    users = Users(body=KEY_DOCUMENT)
    app = web.Application()
    app.router.add_get("/api/api-keys/current", users.me)
    async with serving(app) as users.url:
        yield users


async def test_a_key_is_described_by_users_service_with_its_owner_role_and_scopes(
    key_users: Users, http: HttpSession
) -> None:
    principal = await check_of(http, [key_users.url], Clock()).resolve_api_key(KEY)

    assert principal == Principal(
        SUBJECT,
        "customer",
        api_key_id="3f1e0000-0000-4000-8000-0000000000aa",
        scopes=frozenset({"orders:read", "orders:write"}),
    )
    assert key_users.asked == [f"Bearer {KEY}"]


async def test_a_revoked_key_is_refused_once_the_kept_answer_is_older_than_the_cache_time(
    key_users: Users, http: HttpSession
) -> None:
    clock = Clock()
    check = check_of(http, [key_users.url], clock, cache_s=5)
    await check.resolve_api_key(KEY)
    key_users.status, key_users.body = 401, {"error": {"code": "UNAUTHENTICATED", "message": "x"}}

    clock.now = 4.9
    assert (await check.resolve_api_key(KEY)).api_key_id is not None
    clock.now = 5.0
    with pytest.raises(UnauthenticatedError) as caught:
        await check.resolve_api_key(KEY)

    assert "revoked" in caught.value.message
    assert len(key_users.asked) == 2


@pytest.mark.parametrize(
    "data",
    [
        {"id": "k", "scopes": "orders:read", "owner": {"id": SUBJECT, "role": "customer"}},
        {"id": "k", "scopes": [1], "owner": {"id": SUBJECT, "role": "customer"}},
        {"id": "k", "scopes": [], "owner": {"id": SUBJECT, "role": "emperor"}},
        {"id": None, "scopes": [], "owner": {"id": SUBJECT, "role": "customer"}},
        {"id": "k", "scopes": []},
    ],
)
async def test_a_key_description_that_is_not_one_is_unavailable_never_a_guess(
    key_users: Users, http: HttpSession, data: object
) -> None:
    key_users.body = {"data": data}

    with pytest.raises(UnavailableError):
        await check_of(http, [key_users.url], Clock()).resolve_api_key(KEY)


async def test_a_suspended_owners_key_is_forbidden(key_users: Users, http: HttpSession) -> None:
    key_users.status = 403

    with pytest.raises(ForbiddenError):
        await check_of(http, [key_users.url], Clock()).resolve_api_key(KEY)


async def test_a_refused_key_is_asked_about_once_within_the_cache_time(
    key_users: Users, http: HttpSession
) -> None:
    clock = Clock()
    check = check_of(http, [key_users.url], clock, cache_s=5)
    key_users.status, key_users.body = 401, {"error": {"code": "UNAUTHENTICATED", "message": "x"}}

    for now in (0.0, 2.0, 4.9):
        clock.now = now
        with pytest.raises(UnauthenticatedError) as refused:
            await check.resolve_api_key(KEY)
        assert "revoked" in refused.value.message
    assert key_users.asked == [f"Bearer {KEY}"]
    key_users.status, key_users.body = 200, KEY_DOCUMENT  # a key made meanwhile, say
    clock.now = 5.0
    assert (await check.resolve_api_key(KEY)).subject == SUBJECT
    assert len(key_users.asked) == 2


async def test_a_suspended_owners_key_is_kept_refused_too(
    key_users: Users, http: HttpSession
) -> None:
    check = check_of(http, [key_users.url], Clock(), cache_s=5)
    key_users.status = 403

    for _ in range(2):
        with pytest.raises(ForbiddenError):
            await check.resolve_api_key(KEY)
    assert len(key_users.asked) == 1


async def test_users_services_silence_is_never_kept(key_users: Users, http: HttpSession) -> None:
    check = check_of(http, [key_users.url], Clock(), cache_s=5)
    key_users.status = 503

    for _ in range(2):
        with pytest.raises(UnavailableError):
            await check.resolve_api_key(KEY)
    assert len(key_users.asked) == 2


async def test_refusals_are_bounded_and_never_push_out_a_known_keys_answer(
    key_users: Users, http: HttpSession
) -> None:
    replicas = Replicas(http, [key_users.url], name="users-service", message=USERS_UNAVAILABLE)
    check = CallerCheck(replicas, cache_s=5, max_refusals=3, clock=Clock())
    await check.resolve_api_key(KEY)  # a real key's answer, kept
    key_users.status, key_users.body = 401, {"error": {"code": "UNAUTHENTICATED", "message": "x"}}
    made_up = [f"ak_live_{n:043d}" for n in range(10)]

    for key in made_up:
        with pytest.raises(UnauthenticatedError):
            await check.resolve_api_key(key)
    assert len(check._refusals) == 3  # the three most recent; the first seven forgotten
    with pytest.raises(UnauthenticatedError):
        await check.resolve_api_key(made_up[0])  # forgotten: asked again
    with pytest.raises(UnauthenticatedError):
        await check.resolve_api_key(made_up[-1])  # still kept: not asked
    assert (await check.resolve_api_key(KEY)).subject == SUBJECT  # still kept: not asked
    assert key_users.asked.count(f"Bearer {made_up[0]}") == 2
    assert key_users.asked.count(f"Bearer {made_up[-1]}") == 1
    assert key_users.asked.count(f"Bearer {KEY}") == 1
