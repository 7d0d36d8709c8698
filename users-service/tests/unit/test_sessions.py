"""Sessions: rotation, reuse detection, lifetimes, logout, suspension and the caller check, on
in-memory stores (conftest's FakeSessions) and a clock the tests move."""

from __future__ import annotations

import logging
import uuid
from types import SimpleNamespace
from typing import Any

import jwt
import pytest
from argon2 import PasswordHasher
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from api_shared.auth import Principal, Role
from api_shared.errors import (
    ForbiddenError,
    InvalidCredentialsError,
    NotFoundError,
    UnauthenticatedError,
)
from api_shared.paging import parse_page
from users_service.budgets import Throttle
from users_service.models import User
from users_service.passwords import Passwords
from users_service.sessions.keys import SigningKeys
from users_service.sessions.ports import Client, SessionTokens
from users_service.sessions.services import SESSION_DEFAULT_SORT, SESSION_SORTS, SessionService
from users_service.sessions.tokens import TokenIssuer
from users_service.users.login import AuthService
from users_service.users.schemas import UserCreate, UserUpdate
from users_service.users.services import UserService

PASSWORD = "password-1"
TTL_S = 3600
LIFETIME_S = 4 * 3600
# What GET /api/auth/sessions reads from a query without parameters.
FIRST_PAGE = parse_page([], sorts=SESSION_SORTS, default_sort=SESSION_DEFAULT_SORT)


@pytest.fixture
def world(fake_users: Any, fake_sessions: Any, clock: Any, throttle: Throttle) -> Any:
    """Users, sessions, login and user updates sharing one clock and one store."""
    users = fake_users()
    store = fake_sessions(users.rows)
    keys = SigningKeys.of(Ed25519PrivateKey.generate())
    issuer = TokenIssuer(keys, issuer="users-service", audience="api-platform", ttl_s=900)
    sessions = SessionService(
        store, users, issuer, throttle, refresh_ttl_s=TTL_S, max_lifetime_s=LIFETIME_S, clock=clock
    )
    passwords = Passwords(PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))

    return SimpleNamespace(
        users=users,
        store=store,
        sessions=sessions,
        clock=clock,
        auth=AuthService(users, passwords, sessions, throttle),
        user_service=UserService(users, passwords, sessions, throttle),
    )


async def sign_up(world: Any, role: Role = Role.CUSTOMER) -> User:
    body = UserCreate.model_validate(
        {"name": "U", "email": f"u-{uuid.uuid4().hex[:8]}@example.com", "password": PASSWORD}
    )
    user: User = await world.user_service.sign_up(body, None)
    user.role = role
    return user


async def log_in(world: Any, user: User) -> SessionTokens:
    tokens: SessionTokens = await world.auth.log_in(
        user.email, PASSWORD, Client("test-agent/1.0", "192.0.2.7")
    )
    return tokens


def principal_of(tokens: SessionTokens) -> Principal:
    claims = jwt.decode(tokens.access_token, options={"verify_signature": False})
    return Principal(claims["sub"], claims["role"], claims["sid"])


# --- rotation -----------------------------------------------------------------------------------


async def test_a_refresh_spends_the_token_and_hands_out_the_next_in_the_same_session(
    world: Any,
) -> None:
    user = await sign_up(world)
    first = await log_in(world, user)

    second = await world.sessions.refresh(first.refresh_token)

    assert second.refresh_token != first.refresh_token
    assert second.access_token != first.access_token
    assert principal_of(second).session_id == principal_of(first).session_id
    assert (second.expires_in, second.refresh_expires_in) == (900, TTL_S)
    third = await world.sessions.refresh(second.refresh_token)
    assert principal_of(third).subject == str(user.id)


async def test_a_refresh_keeps_the_time_of_the_sessions_login(world: Any) -> None:
    # auth_time says when the person proved who they are: a refresh proves nothing more, so
    # what needs a recent login (minting an API key) is not unlocked by refreshing.
    user = await sign_up(world)
    logged_in_at = int(world.clock().timestamp())
    first = await log_in(world, user)
    world.clock.advance(1800)

    refreshed = await world.sessions.refresh(first.refresh_token)

    for tokens in (first, refreshed):
        claims = jwt.decode(tokens.access_token, options={"verify_signature": False})
        assert claims["auth_time"] == logged_in_at
    world.clock.advance(60)
    again = await log_in(world, user)  # a new login is a new authentication
    claims = jwt.decode(again.access_token, options={"verify_signature": False})
    assert claims["auth_time"] == logged_in_at + 1860


async def test_replaying_a_spent_token_ends_the_session_and_is_logged_as_a_security_event(
    world: Any, caplog: pytest.LogCaptureFixture
) -> None:
    user = await sign_up(world)
    first = await log_in(world, user)
    latest = first
    for _ in range(3):
        latest = await world.sessions.refresh(latest.refresh_token)

    with (
        caplog.at_level(logging.WARNING, "users_service.sessions"),
        pytest.raises(InvalidCredentialsError),
    ):
        await world.sessions.refresh(first.refresh_token)

    # The thief's replay ended the session for the owner too: the latest token is dead.
    with pytest.raises(InvalidCredentialsError):
        await world.sessions.refresh(latest.refresh_token)
    with pytest.raises(UnauthenticatedError):
        await world.sessions.resolve_caller(principal_of(latest))
    [event] = [r for r in caplog.records if getattr(r, "event", None) == "refresh_token_reuse"]
    assert event.levelno == logging.WARNING
    assert event.session_id == principal_of(first).session_id  # type: ignore[attr-defined]  # an extra of the log call
    assert event.user_id == str(user.id)  # type: ignore[attr-defined]  # an extra of the log call
    assert first.refresh_token not in caplog.text


async def test_a_reused_token_ends_only_its_own_session(world: Any) -> None:
    user = await sign_up(world)
    stolen, other = await log_in(world, user), await log_in(world, user)
    await world.sessions.refresh(stolen.refresh_token)

    with pytest.raises(InvalidCredentialsError):
        await world.sessions.refresh(stolen.refresh_token)

    assert await world.sessions.refresh(other.refresh_token)


@pytest.mark.parametrize(
    "token",
    ["", "not-a-token", f"{uuid.uuid4().hex}.{'A' * 43}", "x" * 10_000],
    ids=["empty", "garbage", "well-formed-unknown", "huge"],
)
async def test_an_unknown_or_malformed_refresh_token_is_invalid_credentials(
    world: Any, token: str
) -> None:
    with pytest.raises(InvalidCredentialsError):
        await world.sessions.refresh(token)


async def test_a_token_with_another_sessions_prefix_is_unknown(world: Any) -> None:
    user = await sign_up(world)
    mine, other = await log_in(world, user), await log_in(world, user)
    other_session = principal_of(other).session_id
    assert other_session is not None
    forged = f"{uuid.UUID(other_session).hex}.{mine.refresh_token.split('.')[1]}"

    with pytest.raises(InvalidCredentialsError):
        await world.sessions.refresh(forged)

    assert await world.sessions.refresh(mine.refresh_token)  # neither session was harmed
    assert await world.sessions.refresh(other.refresh_token)


async def test_a_refresh_token_expires_after_its_ttl(world: Any) -> None:
    user = await sign_up(world)
    tokens = await log_in(world, user)

    world.clock.advance(TTL_S + 1)

    with pytest.raises(InvalidCredentialsError):
        await world.sessions.refresh(tokens.refresh_token)


async def test_refreshing_never_extends_a_session_past_its_absolute_lifetime(world: Any) -> None:
    user = await sign_up(world)
    tokens = await log_in(world, user)
    for _ in range(4):
        world.clock.advance(TTL_S - 60)
        tokens = await world.sessions.refresh(tokens.refresh_token)

    assert tokens.refresh_expires_in == LIFETIME_S - 4 * (TTL_S - 60)  # capped by the lifetime
    world.clock.advance(tokens.refresh_expires_in)
    with pytest.raises(InvalidCredentialsError):
        await world.sessions.refresh(tokens.refresh_token)


# --- logout and session management --------------------------------------------------------------


async def test_logging_out_ends_the_session_and_an_unknown_token_changes_nothing(
    world: Any,
) -> None:
    user = await sign_up(world)
    tokens, other = await log_in(world, user), await log_in(world, user)

    await world.sessions.log_out("not-a-token")
    await world.sessions.log_out(tokens.refresh_token)

    with pytest.raises(InvalidCredentialsError):
        await world.sessions.refresh(tokens.refresh_token)
    with pytest.raises(UnauthenticatedError):
        await world.sessions.resolve_caller(principal_of(tokens))
    assert await world.sessions.resolve_caller(principal_of(other)) is user


async def test_logging_out_everywhere_ends_every_session_of_the_caller_only(world: Any) -> None:
    me, someone = await sign_up(world), await sign_up(world)
    mine = [await log_in(world, me) for _ in range(3)]
    theirs = await log_in(world, someone)

    assert await world.sessions.log_out_everywhere(me) == 3

    for tokens in mine:
        with pytest.raises(InvalidCredentialsError):
            await world.sessions.refresh(tokens.refresh_token)
    assert await world.sessions.refresh(theirs.refresh_token)


async def test_the_sessions_list_shows_the_callers_open_sessions_and_one_can_be_ended(
    world: Any,
) -> None:
    me, someone = await sign_up(world), await sign_up(world)
    first = await log_in(world, me)
    world.clock.advance(10)
    second = await log_in(world, me)
    theirs = await log_in(world, someone)

    sessions, total = await world.sessions.list(me, FIRST_PAGE)

    assert total == 2
    assert [str(s.id) for s in sessions] == [
        principal_of(second).session_id,
        principal_of(first).session_id,
    ]  # most recently used first
    assert sessions[0].user_agent == "test-agent/1.0"
    with pytest.raises(NotFoundError):  # someone else's session is not the caller's to end
        await world.sessions.end(me, principal_of(theirs).session_id)
    with pytest.raises(NotFoundError):
        await world.sessions.end(me, "not-a-uuid")
    await world.sessions.end(me, principal_of(first).session_id)
    assert (await world.sessions.list(me, FIRST_PAGE))[1] == 1
    assert await world.sessions.refresh(theirs.refresh_token)


async def test_ended_and_expired_sessions_are_purged(world: Any) -> None:
    user = await sign_up(world)
    ended, expiring = await log_in(world, user), await log_in(world, user)
    await world.sessions.log_out(ended.refresh_token)
    world.clock.advance(LIFETIME_S - 10)
    live = await log_in(world, user)
    world.clock.advance(20)

    assert await world.sessions.purge() > 0

    assert set(world.store.sessions) == {uuid.UUID(principal_of(live).session_id)}
    with pytest.raises(InvalidCredentialsError):
        await world.sessions.refresh(expiring.refresh_token)


# --- the caller check ---------------------------------------------------------------------------


async def test_a_token_without_a_session_or_of_another_users_session_is_refused(
    world: Any,
) -> None:
    me, someone = await sign_up(world), await sign_up(world)
    theirs = principal_of(await log_in(world, someone))

    for principal in (
        Principal(str(me.id), "customer"),
        Principal(str(me.id), "customer", "not-a-uuid"),
        Principal(str(me.id), "customer", theirs.session_id),
    ):
        with pytest.raises(UnauthenticatedError):
            await world.sessions.resolve_caller(principal)


async def test_changing_ones_own_password_ends_ones_other_sessions_only(world: Any) -> None:
    me = await sign_up(world)
    here, elsewhere = await log_in(world, me), await log_in(world, me)

    await world.user_service.update(
        principal_of(here),
        str(me.id),
        UserUpdate.model_validate({"password": "password-2", "currentPassword": PASSWORD}),
    )

    assert await world.sessions.resolve_caller(principal_of(here)) is me
    with pytest.raises(UnauthenticatedError):
        await world.sessions.resolve_caller(principal_of(elsewhere))
    with pytest.raises(InvalidCredentialsError):
        await world.sessions.refresh(elsewhere.refresh_token)


@pytest.mark.parametrize(
    "change",
    [{"email": "new@example.com"}, {"password": "password-2"}, {"role": "admin"}],
    ids=["email", "password", "role"],
)
async def test_an_admin_changing_credentials_or_role_ends_every_session_of_the_user(
    world: Any, change: dict[str, str]
) -> None:
    admin, user = await sign_up(world, Role.ADMIN), await sign_up(world)
    admin_tokens = await log_in(world, admin)
    sessions = [await log_in(world, user) for _ in range(2)]

    await world.user_service.update(
        principal_of(admin_tokens), str(user.id), UserUpdate.model_validate(change)
    )

    for tokens in sessions:
        with pytest.raises(UnauthenticatedError):
            await world.sessions.resolve_caller(principal_of(tokens))
    assert await world.sessions.resolve_caller(principal_of(admin_tokens)) is admin


async def test_renaming_oneself_ends_no_session(world: Any) -> None:
    me = await sign_up(world)
    here, elsewhere = await log_in(world, me), await log_in(world, me)

    await world.user_service.update(
        principal_of(here), str(me.id), UserUpdate.model_validate({"name": "Renamed"})
    )

    assert await world.sessions.resolve_caller(principal_of(elsewhere)) is me


# --- suspension ---------------------------------------------------------------------------------


async def test_suspension_ends_every_session_and_refuses_login_only_after_the_password(
    world: Any,
) -> None:
    admin, user = await sign_up(world, Role.ADMIN), await sign_up(world)
    by_admin = principal_of(await log_in(world, admin))
    tokens = await log_in(world, user)

    await world.user_service.update(
        by_admin, str(user.id), UserUpdate.model_validate({"isActive": False})
    )

    assert user.is_active is False
    with pytest.raises(ForbiddenError, match="suspended"):
        await world.sessions.resolve_caller(principal_of(tokens))
    with pytest.raises(ForbiddenError, match="suspended"):
        await world.sessions.refresh(tokens.refresh_token)
    with pytest.raises(InvalidCredentialsError):  # a wrong password learns nothing
        await world.auth.log_in(user.email, "wrong-password", Client())
    with pytest.raises(ForbiddenError, match="suspended"):
        await log_in(world, user)
    assert world.store.sessions[uuid.UUID(principal_of(tokens).session_id)].revoked_at

    await world.user_service.update(
        by_admin, str(user.id), UserUpdate.model_validate({"isActive": True})
    )

    back = await log_in(world, user)
    assert await world.sessions.resolve_caller(principal_of(back)) is user
    with pytest.raises(InvalidCredentialsError):  # lifting it does not reopen old sessions
        await world.sessions.refresh(tokens.refresh_token)


async def test_only_an_admin_suspends_and_never_themselves(world: Any) -> None:
    admin, user = await sign_up(world, Role.ADMIN), await sign_up(world)
    by_admin = principal_of(await log_in(world, admin))
    by_user = principal_of(await log_in(world, user))
    suspend = UserUpdate.model_validate({"isActive": False})

    with pytest.raises(ForbiddenError):
        await world.user_service.update(by_user, str(user.id), suspend)
    with pytest.raises(ForbiddenError):
        await world.user_service.update(by_admin, str(admin.id), suspend)

    assert admin.is_active
    assert user.is_active
    assert await world.sessions.resolve_caller(by_user) is user
