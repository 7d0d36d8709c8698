"""The rules of users and login, on an in-memory store: no HTTP, no database."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypedDict

import pytest
from argon2 import PasswordHasher
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from api_shared.auth import Principal, Role, StaticKeySource, TokenVerifier
from api_shared.errors import (
    EmailTakenError,
    ForbiddenError,
    InvalidCredentialsError,
    NotFoundError,
    ValidationFailedError,
)
from api_shared.paging import PageRequest, parse_page
from users_service.budgets import Throttle
from users_service.models import User
from users_service.passwords import Passwords
from users_service.sessions.keys import SigningKeys
from users_service.sessions.ports import Client
from users_service.sessions.services import SessionService
from users_service.sessions.tokens import TokenIssuer
from users_service.users.listing import DEFAULT_SORT, FILTERS, SORTS
from users_service.users.login import AuthService
from users_service.users.ports import UserChanges
from users_service.users.schemas import UserCreate, UserDeletion, UserUpdate
from users_service.users.services import AdminEmailTakenError, UserService


class HasherCost(TypedDict):
    """PasswordHasher's cost parameters, typed for ``PasswordHasher(**cost)``."""

    time_cost: int
    memory_cost: int
    parallelism: int


CHEAP: HasherCost = {"time_cost": 1, "memory_cost": 8, "parallelism": 1}


class SpyPasswords(Passwords):
    """Real (cheap) Argon2 that also counts dummy verifications."""

    def __init__(self, hasher: PasswordHasher) -> None:
        super().__init__(hasher)
        self.dummy_verifications = 0
        self.hashes = 0

    async def hash(self, password: str) -> str:
        self.hashes += 1
        return await super().hash(password)

    async def verify_dummy(self, password: str) -> None:
        self.dummy_verifications += 1
        await super().verify_dummy(password)


@pytest.fixture
def store(fake_users: Any) -> Any:
    """An in-memory UserStore (conftest's FakeUsers)."""
    return fake_users()


@pytest.fixture
def passwords() -> SpyPasswords:
    return SpyPasswords(PasswordHasher(**CHEAP))


@pytest.fixture
def keys() -> SigningKeys:
    return SigningKeys.of(Ed25519PrivateKey.generate())


@pytest.fixture
def session_service(
    fake_sessions: Any, throttle: Throttle
) -> Callable[[Any, SigningKeys], SessionService]:
    """Sessions over an in-memory store (see conftest), for the users of ``store``."""

    def make(store: Any, keys: SigningKeys) -> SessionService:
        issuer = TokenIssuer(keys, issuer="users-service", audience="api-platform", ttl_s=900)
        # Every user has an open session whose id is theirs (see caller_for): these tests
        # are about users; test_sessions.py is about sessions.
        return SessionService(
            fake_sessions(store.rows, implicit=True),
            store,
            issuer,
            throttle,
            refresh_ttl_s=3600,
            max_lifetime_s=7200,
        )

    return make


@pytest.fixture
def sessions(
    store: Any, keys: SigningKeys, session_service: Callable[..., SessionService]
) -> SessionService:
    return session_service(store, keys)


@pytest.fixture
def users(
    store: Any, passwords: SpyPasswords, sessions: SessionService, throttle: Throttle
) -> UserService:
    return UserService(store, passwords, sessions, throttle)


@pytest.fixture
def auth(
    store: Any, passwords: SpyPasswords, sessions: SessionService, throttle: Throttle
) -> AuthService:
    return AuthService(store, passwords, sessions, throttle)


@pytest.fixture
def admin(store: Any) -> Principal:
    """An admin's token; the admin's row is in the store, where its role is read from."""
    now = datetime.now(UTC)
    row = User(
        id=uuid.uuid4(), name="Admin", email=None, role=Role.ADMIN, created_at=now, updated_at=now
    )
    store.rows[row.id] = row
    return caller_for(row)


def caller_for(user: User) -> Principal:
    """The token of ``user``, in the session the fake store opens for them (its id is theirs)."""
    return Principal(subject=str(user.id), role=user.role.value, session_id=str(user.id))


PASSWORD = "password-1"


async def a_user(
    users: UserService, *, password: str | None = PASSWORD, role: Role = Role.CUSTOMER
) -> User:
    """A user, added as the store would (role and password as given)."""
    email = f"u-{uuid.uuid4().hex[:8]}@example.com"
    password_hash = None if password is None else await users.passwords.hash(password)
    return await users.users.add(name="User", email=email, password_hash=password_hash, role=role)


def confirmed(current_password: str) -> UserDeletion:
    return UserDeletion.model_validate({"currentPassword": current_password})


def create(**body: Any) -> UserCreate:
    return UserCreate.model_validate({"name": "New", **body})


def update(**body: Any) -> UserUpdate:
    return UserUpdate.model_validate(body)


# --- sign-up ----------------------------------------------------------------------------------


async def test_sign_up_makes_a_customer_and_stores_only_a_hash_of_the_password(
    users: UserService, passwords: SpyPasswords
) -> None:
    user = await users.sign_up(create(email="a@example.com", password="password-1"), None)

    assert user.role is Role.CUSTOMER
    assert user.password_hash is not None
    assert user.password_hash.startswith("$argon2id$")
    assert await passwords.verify(user.password_hash, "password-1")


@pytest.mark.parametrize("who", ["anonymous", "customer"])
async def test_only_an_admin_can_sign_up_an_admin(
    users: UserService, store: Any, admin: Principal, who: str
) -> None:
    caller = caller_for(await a_user(users)) if who == "customer" else None
    rows = len(store.rows)

    with pytest.raises(ForbiddenError):
        await users.sign_up(create(role="admin"), caller)

    assert len(store.rows) == rows
    assert (await users.sign_up(create(role="admin"), admin)).role is Role.ADMIN


async def test_a_password_without_an_email_is_refused(users: UserService) -> None:
    with pytest.raises(ValidationFailedError) as caught:
        await users.sign_up(create(password="password-1"), None)

    assert caught.value.fields == {"password": "requires an email"}


async def test_a_taken_email_is_email_taken(users: UserService) -> None:
    await users.sign_up(create(email="dup@example.com"), None)

    with pytest.raises(EmailTakenError):
        await users.sign_up(create(email="DUP@example.com"), None)


async def test_a_taken_email_is_refused_before_any_hashing(
    users: UserService, passwords: SpyPasswords
) -> None:
    me, other = await a_user(users), await a_user(users)
    hashes = passwords.hashes

    with pytest.raises(EmailTakenError):
        await users.sign_up(create(email=other.email, password="password-2"), None)
    with pytest.raises(EmailTakenError):
        await users.update(
            caller_for(me),
            str(me.id),
            update(email=other.email, password="password-2", currentPassword=PASSWORD),
        )

    assert passwords.hashes == hashes


# --- who may act on which user ----------------------------------------------------------------


async def test_a_customer_reads_themself_under_any_spelling_of_their_id(
    users: UserService,
) -> None:
    me = await a_user(users)

    for spelling in (str(me.id), str(me.id).upper(), me.id.hex):
        assert await users.get(caller_for(me), spelling) is me


@pytest.mark.parametrize("target", ["other", "missing", "malformed"])
async def test_a_customer_is_refused_every_other_id_before_any_lookup(
    users: UserService, target: str
) -> None:
    me, other = await a_user(users), await a_user(users)
    user_id = {"other": str(other.id), "missing": str(uuid.uuid4()), "malformed": "nope"}[target]

    with pytest.raises(ForbiddenError):
        await users.get(caller_for(me), user_id)
    with pytest.raises(ForbiddenError):
        await users.update(caller_for(me), user_id, update(name="X"))
    with pytest.raises(ForbiddenError):
        await users.delete(caller_for(me), user_id)


@pytest.mark.parametrize("user_id", [str(uuid.uuid4()), "not-a-uuid", ""])
async def test_an_admin_naming_no_user_gets_not_found(
    users: UserService, admin: Principal, user_id: str
) -> None:
    with pytest.raises(NotFoundError):
        await users.get(admin, user_id)
    with pytest.raises(NotFoundError):
        await users.delete(admin, user_id)


def page_of(query: list[tuple[str, str]]) -> PageRequest:
    """The page ``GET /api/users`` reads from ``query``."""
    return parse_page(query, sorts=SORTS, default_sort=DEFAULT_SORT, filters=FILTERS)


async def test_only_admins_list_users(users: UserService, store: Any, admin: Principal) -> None:
    customer = caller_for(await a_user(users))

    with pytest.raises(ForbiddenError):
        await users.lister(customer)
    lister = await users.lister(admin)
    with pytest.raises(ForbiddenError):  # the rule holds whoever calls list_users
        await users.list_users(dataclasses.replace(lister, role=Role.CUSTOMER), page_of([]))
    assert store.page_calls == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ([], {"role": None, "order_by": "created_at", "limit": 20, "offset": 0}),
        (
            [("sort", "-createdAt")],
            {"role": None, "order_by": "-created_at", "limit": 20, "offset": 0},
        ),
        (
            [("sort", "-name"), ("role", "admin")],
            {"role": Role.ADMIN, "order_by": "-name", "limit": 20, "offset": 0},
        ),
        (
            [("limit", "500"), ("offset", "-2")],
            {"role": None, "order_by": "created_at", "limit": 100, "offset": 0},
        ),
    ],
)
async def test_the_list_asks_the_store_for_the_requested_page(
    users: UserService,
    store: Any,
    admin: Principal,
    query: list[tuple[str, str]],
    expected: dict[str, Any],
) -> None:
    page = page_of(query)
    await users.list_users(await users.lister(admin), page)

    assert store.page_calls == [expected]
    assert (page.limit, page.offset) == (expected["limit"], expected["offset"])


# --- updates ----------------------------------------------------------------------------------


async def test_a_customer_may_not_change_their_role_and_nothing_is_written(
    users: UserService, store: Any
) -> None:
    me = await a_user(users)
    writes = store.writes

    with pytest.raises(ForbiddenError):
        await users.update(caller_for(me), str(me.id), update(role="admin", name="Sneaky"))

    assert (me.role, me.name, store.writes) == (Role.CUSTOMER, "User", writes)


async def test_restating_ones_own_role_is_not_a_change(users: UserService) -> None:
    me = await a_user(users)

    updated = await users.update(caller_for(me), str(me.id), update(role="customer", name="Me"))

    assert (updated.role, updated.name) == (Role.CUSTOMER, "Me")


async def test_an_admin_changes_a_role(users: UserService, admin: Principal) -> None:
    customer = await a_user(users)

    updated = await users.update(admin, str(customer.id), update(role="admin"))

    assert updated.role is Role.ADMIN


async def test_a_new_password_is_stored_as_a_new_hash(
    users: UserService, passwords: SpyPasswords
) -> None:
    me = await a_user(users)

    updated = await users.update(
        caller_for(me), str(me.id), update(password="brand-new-pw", currentPassword=PASSWORD)
    )

    assert updated.password_hash is not None
    assert await passwords.verify(updated.password_hash, "brand-new-pw")
    assert not await passwords.verify(updated.password_hash, "password-1")


async def test_a_password_needs_an_email_to_log_in_with(
    users: UserService, admin: Principal
) -> None:
    nameless = await users.sign_up(create(), None)
    me = await a_user(users)

    with pytest.raises(ValidationFailedError) as no_email:
        await users.update(admin, str(nameless.id), update(password="password-1"))
    with pytest.raises(ValidationFailedError) as email_removed:
        await users.update(caller_for(me), str(me.id), update(email=None))

    assert no_email.value.fields == {"password": "requires an email"}
    assert email_removed.value.fields == {"email": "is required while the user has a password"}


async def test_setting_an_email_and_a_password_together_is_allowed(
    users: UserService, admin: Principal
) -> None:
    nameless = await users.sign_up(create(), None)

    updated = await users.update(
        admin, str(nameless.id), update(email="new@example.com", password="password-1")
    )

    assert updated.email == "new@example.com"
    assert updated.password_hash is not None


async def test_taking_another_users_email_is_email_taken(users: UserService) -> None:
    me, other = await a_user(users), await a_user(users)
    assert other.email is not None

    with pytest.raises(EmailTakenError):
        await users.update(
            caller_for(me), str(me.id), update(email=other.email, currentPassword=PASSWORD)
        )


async def test_an_update_that_changes_nothing_writes_nothing(
    users: UserService, store: Any
) -> None:
    me = await a_user(users)
    writes = store.writes

    await users.update(caller_for(me), str(me.id), update(name=me.name, email=me.email))

    assert store.writes == writes


async def test_updating_a_user_deleted_meanwhile_is_not_found(
    users: UserService, fake_users: Any
) -> None:
    me = await a_user(users)

    class VanishingUsers(fake_users):  # type: ignore[misc]  # a fixture's class
        async def update(self, user: User, changes: UserChanges) -> bool:
            return False

    vanishing = VanishingUsers()
    vanishing.rows[me.id] = me

    with pytest.raises(NotFoundError):
        await UserService(vanishing, users.passwords, users.sessions, users.throttle).update(
            caller_for(me), str(me.id), update(name="Ghost")
        )


async def test_deleting_twice_is_not_found_the_second_time(
    users: UserService, admin: Principal
) -> None:
    me = await a_user(users)

    await users.delete(caller_for(me), str(me.id), confirmed("password-1"))
    with pytest.raises(NotFoundError):
        await users.delete(admin, str(me.id))


async def test_deleting_oneself_needs_the_current_password_and_a_token_alone_deletes_nothing(
    users: UserService, store: Any
) -> None:
    me = await a_user(users)

    with pytest.raises(ValidationFailedError) as missing:
        await users.delete(caller_for(me), str(me.id))
    with pytest.raises(InvalidCredentialsError):
        await users.delete(caller_for(me), str(me.id), confirmed("a guess"))

    assert missing.value.fields == {"currentPassword": "is required to delete the account"}
    assert await store.get(me.id) is me


async def test_an_admin_deletes_another_user_without_a_password_but_not_themself(
    users: UserService, store: Any
) -> None:
    boss, other = await a_user(users, role=Role.ADMIN), await a_user(users)

    await users.delete(caller_for(boss), str(other.id))
    with pytest.raises(ValidationFailedError):
        await users.delete(caller_for(boss), str(boss.id))

    assert await store.get(other.id) is None
    assert await store.get(boss.id) is boss


# --- login ------------------------------------------------------------------------------------


async def test_logging_in_issues_a_token_for_the_user_and_role(
    users: UserService, auth: AuthService, keys: SigningKeys
) -> None:
    me = await a_user(users, role=Role.ADMIN)
    assert me.email is not None

    token = await auth.log_in(me.email.upper(), "password-1", Client())

    verifier = TokenVerifier(
        StaticKeySource(keys.public_keys), issuer="users-service", audience="api-platform"
    )
    principal = await verifier.verify(token.access_token)
    assert (principal.subject, principal.role) == (str(me.id), "admin")
    assert principal.session_id is not None
    assert token.expires_in == 900


@pytest.mark.parametrize(
    "email", ["nobody@example.com", "not an email", ""], ids=["unknown", "malformed", "empty"]
)
async def test_an_unknown_email_costs_a_dummy_verification_and_is_invalid_credentials(
    auth: AuthService, passwords: SpyPasswords, email: str
) -> None:
    with pytest.raises(InvalidCredentialsError):
        await auth.log_in(email, "password-1", Client())

    assert passwords.dummy_verifications == 1


async def test_a_user_without_a_password_costs_a_dummy_verification_too(
    users: UserService, auth: AuthService, passwords: SpyPasswords
) -> None:
    me = await a_user(users, password=None)
    assert me.email is not None

    with pytest.raises(InvalidCredentialsError):
        await auth.log_in(me.email, "password-1", Client())

    assert passwords.dummy_verifications == 1


async def test_a_wrong_password_is_the_same_invalid_credentials(
    users: UserService, auth: AuthService
) -> None:
    me = await a_user(users)
    assert me.email is not None

    with pytest.raises(InvalidCredentialsError) as wrong:
        await auth.log_in(me.email, "password-2", Client())
    with pytest.raises(InvalidCredentialsError) as unknown:
        await auth.log_in("nobody@example.com", "password-2", Client())

    assert wrong.value.body() == unknown.value.body()


async def test_a_password_longer_than_any_allowed_is_refused_without_hashing(
    users: UserService, auth: AuthService, passwords: SpyPasswords
) -> None:
    me = await a_user(users)
    assert me.email is not None

    with pytest.raises(InvalidCredentialsError):
        await auth.log_in(me.email, "x" * 129, Client())

    assert passwords.dummy_verifications == 0


async def test_a_hash_made_with_older_parameters_is_upgraded_at_login(
    store: Any,
    keys: SigningKeys,
    session_service: Callable[..., SessionService],
    throttle: Throttle,
) -> None:
    old = UserService(
        store, Passwords(PasswordHasher(**CHEAP)), session_service(store, keys), throttle
    )
    me = await a_user(old)
    assert me.email is not None
    stronger = Passwords(PasswordHasher(**(CHEAP | {"time_cost": 2})))

    await AuthService(store, stronger, session_service(store, keys), throttle).log_in(
        me.email, "password-1", Client()
    )

    assert me.password_hash is not None
    assert "t=2" in me.password_hash
    assert not stronger.needs_rehash(me.password_hash)


# --- the start-up admin -----------------------------------------------------------------------


async def test_ensuring_the_admin_creates_it_once(
    users: UserService, store: Any, passwords: SpyPasswords
) -> None:
    await users.ensure_admin("boss@example.com", "boss-password")
    writes = store.writes
    await users.ensure_admin("boss@example.com", "boss-password")

    (admin,) = store.rows.values()
    assert (admin.email, admin.role) == ("boss@example.com", Role.ADMIN)
    assert admin.password_hash is not None
    assert await passwords.verify(admin.password_hash, "boss-password")
    assert store.writes == writes  # the second start-up changed nothing


async def test_ensuring_the_admin_never_promotes_nor_resets_an_existing_customer(
    users: UserService, store: Any, passwords: SpyPasswords
) -> None:
    squatter = await users.sign_up(create(email="boss@example.com", password="squatter-pw"), None)
    writes = store.writes

    with pytest.raises(AdminEmailTakenError):
        await users.ensure_admin("boss@example.com", "boss-password")

    assert store.writes == writes
    assert squatter.role is Role.CUSTOMER
    assert squatter.password_hash is not None
    assert await passwords.verify(squatter.password_hash, "squatter-pw")


async def test_ensuring_the_admin_leaves_an_existing_admins_password_as_it_is(
    users: UserService, passwords: SpyPasswords
) -> None:
    """A password rotated through the API must survive the next start."""
    existing = await a_user(users, role=Role.ADMIN)
    assert existing.email is not None

    await users.ensure_admin(existing.email, "boss-password")

    assert existing.password_hash is not None
    assert await passwords.verify(existing.password_hash, PASSWORD)
    assert not await passwords.verify(existing.password_hash, "boss-password")


async def test_ensuring_the_admin_when_another_replica_just_created_it_changes_nothing(
    store: Any,
    passwords: SpyPasswords,
    keys: SigningKeys,
    session_service: Callable[..., SessionService],
    fake_users: Any,
    throttle: Throttle,
) -> None:
    winner = UserService(store, passwords, session_service(store, keys), throttle)

    class LateStore(fake_users):  # type: ignore[misc]  # a fixture's class
        """Sees no admin, then loses the insert to the other replica."""

        async def get_by_email(self, email: str) -> User | None:
            return None if not store.rows else await store.get_by_email(email)

        async def add(self, **fields: Any) -> User:
            await winner.ensure_admin("boss@example.com", "boss-password")
            user: User = await store.add(**fields)  # the fixture is typed Any
            return user

        async def update(self, user: User, changes: UserChanges) -> bool:
            raise AssertionError("nothing should change")

    late = UserService(LateStore(), passwords, session_service(store, keys), throttle)
    await late.ensure_admin("boss@example.com", "boss-password")

    assert len(store.rows) == 1
