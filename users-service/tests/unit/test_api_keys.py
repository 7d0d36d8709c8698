"""API keys' rules on an in-memory store and a clock the tests move: the key's form and its
hash, who may grant which scopes, the limit per user, resolution (unknown, expired, a
suspended or deleted owner), ``last_used_at`` kept to the minute, and what a key never does
to its owner's account."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any
from uuid import UUID

import pytest
from argon2 import PasswordHasher
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from api_shared.auth import API_KEY_PATTERN, Principal, Role
from api_shared.errors import (
    ForbiddenError,
    InvalidCredentialsError,
    InvalidStateError,
    NotFoundError,
    RateLimitedError,
    ReauthenticationRequiredError,
    UnauthenticatedError,
    ValidationFailedError,
)
from api_shared.paging import parse_page
from api_shared.standing import KEY_REFUSED
from api_shared.validation import parse_input
from users_service.api_keys.material import api_key_hash, new_api_key
from users_service.api_keys.ports import NewApiKey
from users_service.api_keys.schemas import ApiKeyCreate
from users_service.api_keys.services import (
    API_KEY_DEFAULT_SORT,
    API_KEY_SORTS,
    NOT_AN_API_KEY,
    ApiKeyService,
)
from users_service.budgets import Throttle
from users_service.models import ApiKey, User
from users_service.passwords import Passwords
from users_service.policies import KeyPolicy, NoExpiryFor
from users_service.sessions.keys import SigningKeys
from users_service.sessions.ports import Client
from users_service.sessions.services import SessionService
from users_service.sessions.tokens import TokenIssuer
from users_service.users.schemas import UserUpdate
from users_service.users.services import UserService

FIRST_PAGE = parse_page([], sorts=API_KEY_SORTS, default_sort=API_KEY_DEFAULT_SORT)
PASSWORD = "the owner's password"
POLICY = KeyPolicy(
    recent_authentication=timedelta(minutes=10),
    max_lifetime=timedelta(days=365),
    no_expiry_for=NoExpiryFor.NOBODY,
)


class FakeApiKeys:
    """Keys in a dictionary, with the store's rules: the limit, a user's own keys only,
    the owner joined (None once the owner is gone, as the cascade would have it)."""

    def __init__(self, users: dict[UUID, User]) -> None:
        self.users = users
        self.keys: dict[UUID, ApiKey] = {}
        self.touches: list[datetime] = []

    async def add(self, key: NewApiKey, *, limit: int) -> ApiKey | None:
        if sum(k.user_id == key.user_id for k in self.keys.values()) >= limit:
            return None
        stored = ApiKey(
            id=key.id,
            name=key.name,
            prefix=key.prefix,
            secret_hash=key.secret_hash,
            scopes=key.scopes,
            created_at=key.created_at,
            expires_at=key.expires_at,
            last_used_at=None,
        )
        stored.user_id = key.user_id
        self.keys[key.id] = stored
        return stored

    async def with_owner(self, secret_hash: str) -> tuple[ApiKey, User] | None:
        for key in self.keys.values():
            owner = self.users.get(key.user_id)
            if key.secret_hash == secret_hash and owner is not None:
                return key, owner
        return None

    async def get(self, key_id: UUID, user_id: UUID) -> ApiKey | None:
        key = self.keys.get(key_id)
        return key if key is not None and key.user_id == user_id else None

    async def delete(self, key_id: UUID, user_id: UUID) -> bool:
        return await self.get(key_id, user_id) is not None and bool(self.keys.pop(key_id))

    async def delete_all(self, user_id: UUID) -> int:
        own = [key_id for key_id, key in self.keys.items() if key.user_id == user_id]
        for key_id in own:
            del self.keys[key_id]
        return len(own)

    async def page(
        self, user_id: UUID, *, order_by: str, limit: int, offset: int
    ) -> tuple[list[ApiKey], int]:
        own = [k for k in self.keys.values() if k.user_id == user_id]
        field = order_by.lstrip("-")
        own.sort(key=lambda k: (getattr(k, field), k.id), reverse=order_by.startswith("-"))
        return own[offset : offset + limit], len(own)

    async def touch(self, key_id: UUID, now: datetime, *, unless_since: datetime) -> None:
        key = self.keys[key_id]
        if key.last_used_at is None or key.last_used_at < unless_since:
            key.last_used_at = now
            self.touches.append(now)


@pytest.fixture
def world(fake_users: Any, fake_sessions: Any, clock: Any, throttle: Throttle) -> Any:
    """Users, their logins (the fake sessions' implicit ones), keys and the user rules."""
    users = fake_users()
    store = FakeApiKeys(users.rows)
    keys = SigningKeys.of(Ed25519PrivateKey.generate())
    issuer = TokenIssuer(keys, issuer="users-service", audience="api-platform", ttl_s=900)
    sessions = SessionService(
        fake_sessions(users.rows, implicit=True),
        users,
        issuer,
        throttle,
        refresh_ttl_s=3600,
        max_lifetime_s=7200,
        clock=clock,
    )
    passwords = Passwords(PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))
    user_service = UserService(users, passwords, sessions, throttle)
    return SimpleNamespace(
        users=users,
        store=store,
        clock=clock,
        passwords=passwords,
        throttle=throttle,
        keys=ApiKeyService(store, user_service, policy=POLICY, max_per_user=3, clock=clock),
        user_service=user_service,
    )


async def person(world: Any, role: Role = Role.CUSTOMER) -> tuple[User, Principal]:
    """A user and the principal of their login (the fake sessions' implicit one), made now."""
    user: User = await world.users.add(
        name="U",
        email=f"u-{uuid.uuid4().hex[:8]}@example.com",
        password_hash=await world.passwords.hash(PASSWORD),
        role=role,
    )
    return user, login_at(user, world.clock())


def login_at(user: User, moment: datetime | None) -> Principal:
    """The principal of ``user``'s login, authenticated at ``moment`` (None: no auth_time)."""
    return Principal(
        str(user.id),
        user.role.value,
        session_id=str(user.id),
        auth_time=moment.timestamp() if moment is not None else None,
    )


def body(*scopes: str, **extra: Any) -> ApiKeyCreate:
    return parse_input(ApiKeyCreate, {"name": "a script", "scopes": list(scopes), **extra})


async def key_of(world: Any, *scopes: str) -> tuple[User, ApiKey, str]:
    user, login = await person(world)
    stored, secret = await world.keys.create(user, login, body(*scopes))
    return user, stored, secret


def test_a_key_is_256_random_bits_behind_the_live_prefix_and_stored_as_its_sha256() -> None:
    keys = {new_api_key() for _ in range(100)}

    assert len(keys) == 100
    assert all(API_KEY_PATTERN.fullmatch(key) for key in keys)
    key = keys.pop()
    assert api_key_hash(key) == hashlib.sha256(key.encode()).hexdigest()


async def test_a_new_key_keeps_only_the_hash_and_a_display_prefix(world: Any) -> None:
    _, stored, secret = await key_of(world, "users:read", "orders:read")

    assert stored.secret_hash == api_key_hash(secret)
    assert stored.prefix == secret[:12]
    assert secret not in {stored.secret_hash, stored.prefix, stored.scopes, stored.name}
    assert stored.scopes == "orders:read users:read"


async def test_a_person_may_grant_any_scope_to_their_own_key(world: Any) -> None:
    # The owner's role still decides what each scope allows: a customer's users:write key
    # changes only its owner (see users_service.api_keys).
    _, stored, _ = await key_of(world, "users:write", "webhooks:manage", "api-keys:write")

    assert stored.scopes == "api-keys:write users:write webhooks:manage"


async def test_a_key_grants_only_scopes_it_holds(world: Any) -> None:
    user, parent, secret = await key_of(world, "api-keys:write", "orders:read")
    as_key = await world.keys.resolve_api_key(secret)

    with pytest.raises(ForbiddenError) as refused:
        await world.keys.create(user, as_key, body("orders:read", "orders:write", "users:read"))
    child, _ = await world.keys.create(user, as_key, body("orders:read"))

    assert "'orders:write', 'users:read'" in refused.value.message
    assert "'orders:read'" not in refused.value.message
    assert {k.name for k in world.store.keys.values()} == {"a script"}
    assert child.scopes == "orders:read"
    assert child.id != parent.id


async def test_an_expiry_must_be_in_the_future(world: Any) -> None:
    user, login = await person(world)
    now = world.clock()

    with pytest.raises(ValidationFailedError) as refused:
        await world.keys.create(user, login, body("orders:read", expiresAt=now.isoformat()))
    stored, _ = await world.keys.create(
        user, login, body("orders:read", expiresAt=(now + timedelta(seconds=1)).isoformat())
    )

    assert refused.value.fields == {"expiresAt": "must be in the future"}
    assert stored.expires_at == now + timedelta(seconds=1)


async def test_a_user_holds_at_most_the_limit(world: Any) -> None:
    user, login = await person(world)
    for _ in range(3):
        await world.keys.create(user, login, body("orders:read"))

    with pytest.raises(InvalidStateError):
        await world.keys.create(user, login, body("orders:read"))
    other, other_login = await person(world)
    assert await world.keys.create(other, other_login, body("orders:read"))  # per user


async def test_a_key_resolves_to_its_owner_and_its_scopes(world: Any) -> None:
    user, stored, secret = await key_of(world, "users:read", "orders:read")

    principal = await world.keys.resolve_api_key(secret)

    assert principal == Principal(
        subject=str(user.id),
        role="customer",
        api_key_id=str(stored.id),
        scopes=frozenset({"users:read", "orders:read"}),
    )
    assert principal.is_api_key
    assert principal.session_id is None


async def test_the_owners_role_now_decides_not_the_role_at_creation(world: Any) -> None:
    user, _, secret = await key_of(world, "users:read")
    user.role = Role.ADMIN

    assert (await world.keys.resolve_api_key(secret)).role == "admin"


@pytest.mark.parametrize(
    "key",
    ["ak_live_" + "a" * 43, "ak_live_short", "ak_test_" + "a" * 43, ""],
)
async def test_an_unknown_or_malformed_key_is_refused(world: Any, key: str) -> None:
    await key_of(world, "users:read")

    with pytest.raises(UnauthenticatedError) as refused:
        await world.keys.resolve_api_key(key)

    assert refused.value.message == KEY_REFUSED


async def test_an_expired_key_is_refused_from_its_expiry_on(world: Any) -> None:
    user, login = await person(world)
    expiry = world.clock() + timedelta(minutes=5)
    _, secret = await world.keys.create(
        user, login, body("users:read", expiresAt=expiry.isoformat())
    )
    world.clock.advance(299)
    assert await world.keys.resolve_api_key(secret)

    world.clock.advance(1)
    with pytest.raises(UnauthenticatedError):
        await world.keys.resolve_api_key(secret)


async def test_a_revoked_key_and_a_deleted_owners_key_are_refused(world: Any) -> None:
    user, stored, secret = await key_of(world, "users:read")
    gone, _, gone_secret = await key_of(world, "users:read")

    await world.keys.revoke(user, str(stored.id))
    await world.users.delete(gone.id)

    for key in (secret, gone_secret):
        with pytest.raises(UnauthenticatedError):
            await world.keys.resolve_api_key(key)


async def test_a_suspended_owners_key_is_forbidden(world: Any) -> None:
    user, _, secret = await key_of(world, "users:read")
    user.is_active = False

    with pytest.raises(ForbiddenError, match="suspended"):
        await world.keys.resolve_api_key(secret)


async def test_last_used_is_written_at_most_once_a_minute(world: Any) -> None:
    _, stored, secret = await key_of(world, "users:read")
    first_use = world.clock()

    for _ in range(5):
        await world.keys.resolve_api_key(secret)
        world.clock.advance(10)
    world.clock.advance(20)  # a minute and more since the first use
    await world.keys.resolve_api_key(secret)

    assert world.store.touches == [first_use, first_use + timedelta(seconds=70)]
    assert stored.last_used_at == first_use + timedelta(seconds=70)


async def test_current_is_the_requests_key_and_not_found_for_an_access_token(
    world: Any,
) -> None:
    _user, stored, secret = await key_of(world, "orders:read")
    _, login = await person(world)

    assert await world.keys.current(await world.keys.resolve_api_key(secret)) is stored
    with pytest.raises(NotFoundError, match=NOT_AN_API_KEY):
        await world.keys.current(login)


async def test_another_users_key_is_not_found(world: Any) -> None:
    _, stored, _ = await key_of(world, "orders:read")
    other, _ = await person(world)

    for attempt in (world.keys.get, world.keys.revoke):
        with pytest.raises(NotFoundError):
            await attempt(other, str(stored.id))
        with pytest.raises(NotFoundError):
            await attempt(other, "not-an-id")
    assert stored.id in world.store.keys


async def test_the_list_is_the_callers_own_keys_newest_first(world: Any) -> None:
    user, login = await person(world)
    made = []
    for _ in range(3):
        made.append((await world.keys.create(user, login, body("orders:read")))[0])
        world.clock.advance(1)
    await key_of(world, "orders:read")  # someone else's

    keys, total = await world.keys.list(user, FIRST_PAGE)

    assert total == 3
    assert [k.id for k in keys] == [k.id for k in reversed(made)]


async def test_the_caller_of_a_key_is_its_owner_active(world: Any) -> None:
    user, _, secret = await key_of(world, "users:read")
    principal = await world.keys.resolve_api_key(secret)

    assert await world.user_service.caller(principal) is user
    standing = await world.user_service.sessions.caller_standing(principal)
    assert (standing.user_id, standing.role) == (user.id, Role.CUSTOMER)
    user.is_active = False
    with pytest.raises(ForbiddenError):
        await world.user_service.caller(principal)
    await world.users.delete(user.id)
    with pytest.raises(UnauthenticatedError, match="API key"):
        await world.user_service.caller(principal)


async def test_a_key_never_changes_a_password_or_email_nor_deletes_its_owner(
    world: Any,
) -> None:
    user, _, secret = await key_of(world, "users:write")
    principal = await world.keys.resolve_api_key(secret)
    changes = [
        {"password": "another-password", "currentPassword": "x"},
        {"email": "elsewhere@example.com", "currentPassword": "x"},
    ]

    for change in changes:
        with pytest.raises(ForbiddenError, match="not an API key"):
            await world.user_service.update(
                principal, str(user.id), parse_input(UserUpdate, change)
            )
    with pytest.raises(ForbiddenError, match="not an API key"):
        await world.user_service.delete(principal, str(user.id))
    renamed = await world.user_service.update(
        principal, str(user.id), parse_input(UserUpdate, {"name": "Renamed"})
    )

    assert renamed.name == "Renamed"
    assert renamed.email != "elsewhere@example.com"
    assert user.id in world.users.rows


# --- recent authentication, lifetimes, revoking them all ----------------------------------------


async def test_a_login_older_than_the_window_mints_a_key_only_with_the_password(
    world: Any,
) -> None:
    user, _ = await person(world)
    stale = login_at(user, world.clock() - timedelta(minutes=10, seconds=1))
    unknown = login_at(user, None)  # a token issued before auth_time was

    for principal in (stale, unknown):
        with pytest.raises(ReauthenticationRequiredError) as refused:
            await world.keys.create(user, principal, body("orders:read"))
        assert refused.value.code == "REAUTHENTICATION_REQUIRED"
        assert refused.value.status == 403
        assert "currentPassword" in refused.value.message
    with pytest.raises(InvalidCredentialsError):
        await world.keys.create(user, stale, body("orders:read", currentPassword="wrong one"))
    confirmed, _ = await world.keys.create(
        user, stale, body("orders:read", currentPassword=PASSWORD)
    )
    recent, _ = await world.keys.create(
        user, login_at(user, world.clock() - timedelta(minutes=10)), body("orders:read")
    )

    assert {key.id for key in world.store.keys.values()} == {confirmed.id, recent.id}


async def test_wrong_passwords_for_a_key_spend_the_accounts_budget(world: Any) -> None:
    user, _ = await person(world)
    stale = login_at(user, world.clock() - timedelta(hours=1))
    limit = world.throttle.budgets.current_password.burst
    guess = body("orders:read", currentPassword="guess")

    for attempt in range(limit):  # from as many addresses: the account's budget, not theirs
        with pytest.raises(InvalidCredentialsError):
            await world.keys.create(user, stale, guess, Client(address=f"192.0.2.{attempt}"))

    with pytest.raises(RateLimitedError):
        await world.keys.create(
            user, stale, body("orders:read", currentPassword=PASSWORD), Client(address="::1")
        )
    assert world.store.keys == {}


async def test_an_api_key_sends_no_password(world: Any) -> None:
    user, _, secret = await key_of(world, "api-keys:write", "orders:read")
    as_key = await world.keys.resolve_api_key(secret)

    with pytest.raises(ValidationFailedError) as refused:
        await world.keys.create(user, as_key, body("orders:read", currentPassword=PASSWORD))

    assert set(refused.value.fields or {}) == {"currentPassword"}


async def test_a_key_lives_at_most_the_maximum_lifetime(world: Any) -> None:
    user, login = await person(world)
    now = world.clock()
    year = now + timedelta(days=365)

    default, _ = await world.keys.create(user, login, body("orders:read"))
    longest, _ = await world.keys.create(
        user, login, body("orders:read", expiresAt=year.isoformat())
    )
    for too_long in ((year + timedelta(seconds=1)).isoformat(), None):
        with pytest.raises(ValidationFailedError) as refused:
            await world.keys.create(user, login, body("orders:read", expiresAt=too_long))
        assert set(refused.value.fields or {}) == {"expiresAt"}

    assert (default.expires_at, longest.expires_at) == (year, year)
    assert len(world.store.keys) == 2


async def test_where_the_policy_allows_it_an_admin_makes_a_key_that_never_expires(
    world: Any,
) -> None:
    admins_only = KeyPolicy(POLICY.recent_authentication, POLICY.max_lifetime, NoExpiryFor.ADMINS)
    world.keys.policy = admins_only
    admin, admin_login = await person(world, Role.ADMIN)
    customer, customer_login = await person(world)
    decade = (world.clock() + timedelta(days=3650)).isoformat()

    never, _ = await world.keys.create(admin, admin_login, body("orders:read", expiresAt=None))
    long, _ = await world.keys.create(admin, admin_login, body("orders:read", expiresAt=decade))
    with pytest.raises(ValidationFailedError):
        await world.keys.create(customer, customer_login, body("orders:read", expiresAt=None))

    assert never.expires_at is None
    assert long.expires_at == world.clock() + timedelta(days=3650)


async def test_a_child_key_expires_no_later_than_the_key_that_makes_it(world: Any) -> None:
    user, login = await person(world)
    parent_expiry = world.clock() + timedelta(minutes=2)
    _, secret = await world.keys.create(
        user,
        login,
        body("api-keys:write", "orders:read", expiresAt=parent_expiry.isoformat()),
    )
    as_parent = await world.keys.resolve_api_key(secret)

    child, _ = await world.keys.create(user, as_parent, body("orders:read"))
    sooner, _ = await world.keys.create(
        user,
        as_parent,
        body("orders:read", expiresAt=(parent_expiry - timedelta(seconds=1)).isoformat()),
    )
    refusals = []
    for outliving in ((parent_expiry + timedelta(seconds=1)).isoformat(), None):
        with pytest.raises(ValidationFailedError) as refused:
            await world.keys.create(user, as_parent, body("orders:read", expiresAt=outliving))
        refusals.append(refused.value.fields)

    assert child.expires_at == parent_expiry
    assert sooner.expires_at == parent_expiry - timedelta(seconds=1)
    assert refusals == [
        {"expiresAt": f"must be no later than the key that makes it ({parent_expiry.isoformat()})"},
        {"expiresAt": "must be set: a key expires, no later than the key that makes it"},
    ]
    assert len(world.store.keys) == 3


async def test_a_revoked_parent_mints_nothing(world: Any) -> None:
    user, stored, secret = await key_of(world, "api-keys:write", "orders:read")
    as_parent = await world.keys.resolve_api_key(secret)
    await world.keys.revoke(user, str(stored.id))

    with pytest.raises(UnauthenticatedError):
        await world.keys.create(user, as_parent, body("orders:read"))
    assert world.store.keys == {}


async def test_every_key_of_the_caller_is_revoked_at_once_with_a_recent_login(
    world: Any,
) -> None:
    user, login = await person(world)
    other, _, other_secret = await key_of(world, "orders:read")
    secrets = [(await world.keys.create(user, login, body("orders:read")))[1] for _ in range(3)]
    stale = login_at(user, world.clock() - timedelta(hours=1))

    with pytest.raises(ReauthenticationRequiredError):
        await world.keys.revoke_all(user, stale, None, Client())
    assert len(world.store.keys) == 4
    revoked = await world.keys.revoke_all(user, stale, PASSWORD, Client())

    assert revoked == 3
    for secret in secrets:
        with pytest.raises(UnauthenticatedError):
            await world.keys.resolve_api_key(secret)
    assert (await world.keys.resolve_api_key(other_secret)).subject == str(other.id)
    assert await world.keys.revoke_all(user, login, None, Client()) == 0
