"""The rules of the users resource and of login, independent of HTTP.

They are docs/api.md#users and docs/api.md#authentication.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from api_shared.auth import Principal
from api_shared.errors import (
    EmailTakenError,
    ForbiddenError,
    InvalidCredentialsError,
    NotFoundError,
    ValidationFailedError,
)
from api_shared.paging import PageRequest, choice, parse_page
from users_service.emails import normalize_email
from users_service.models import Role, User
from users_service.passwords import PASSWORD_MAX_LENGTH, Passwords
from users_service.repository import EmailInUseError, UserChanges
from users_service.schemas import UserCreate, UserUpdate
from users_service.tokens import IssuedToken, TokenIssuer

logger = logging.getLogger(__name__)

# Wire sort names and the model fields they order by.
SORT_FIELDS = {"createdAt": "created_at", "name": "name"}
FILTERS = {"role": choice(*(role.value for role in Role))}
ADMIN_NAME = "Administrator"


class UserStore(Protocol):
    """The queries the rules need (``UserRepository``, or a fake in unit tests)."""

    async def get(self, user_id: UUID) -> User | None: ...
    async def get_by_email(self, email: str) -> User | None: ...
    async def add(
        self, *, name: str, email: str | None, password_hash: str | None, role: Role
    ) -> User: ...
    async def update(self, user: User, changes: UserChanges) -> bool: ...
    async def delete(self, user_id: UUID) -> bool: ...
    async def page(
        self, *, role: Role | None, order_by: str, limit: int, offset: int
    ) -> tuple[list[User], int]: ...


@dataclass(frozen=True, slots=True)
class UserPage:
    users: list[User]
    total: int
    request: PageRequest


class UserService:
    """Sign-up, reading, updating and deleting users, and the start-up admin."""

    def __init__(self, users: UserStore, passwords: Passwords) -> None:
        self.users = users
        self.passwords = passwords

    async def sign_up(self, data: UserCreate, caller: Principal | None) -> User:
        """Anyone may sign up; only an admin may create an admin."""
        role = data.role or Role.CUSTOMER
        if role is Role.ADMIN and not (caller and caller.is_admin):
            raise ForbiddenError("Only an admin can create an admin.")
        if data.password is not None and data.email is None:
            raise _password_needs_email()
        password_hash = (
            await self.passwords.hash(data.password) if data.password is not None else None
        )
        try:
            return await self.users.add(
                name=data.name, email=data.email, password_hash=password_hash, role=role
            )
        except EmailInUseError:
            raise EmailTakenError() from None

    async def list_users(self, caller: Principal, query: Iterable[tuple[str, str]]) -> UserPage:
        """Admins only; the query parameters are checked after the caller is."""
        if not caller.is_admin:
            raise ForbiddenError("Only an admin can list users.")
        page = parse_page(
            query, sorts=tuple(SORT_FIELDS), default_sort="createdAt", filters=FILTERS
        )
        order_by = SORT_FIELDS[page.sort.field]
        role = page.filters.get("role")
        users, total = await self.users.page(
            role=Role(role) if role else None,
            order_by=f"-{order_by}" if page.sort.descending else order_by,
            limit=page.limit,
            offset=page.offset,
        )
        return UserPage(users, total, page)

    async def get(self, caller: Principal, user_id: str) -> User:
        return await self._find(_accessible_id(caller, user_id))

    async def update(self, caller: Principal, user_id: str, data: UserUpdate) -> User:
        user = await self._find(_accessible_id(caller, user_id))
        if data.role is not None and data.role != user.role and not caller.is_admin:
            raise ForbiddenError("Only an admin can change a role.")
        changes: UserChanges = {}
        if data.name is not None and data.name != user.name:
            changes["name"] = data.name
        if "email" in data.model_fields_set and data.email != user.email:
            changes["email"] = data.email
        if data.role is not None and data.role != user.role:
            changes["role"] = data.role
        # A password is only usable with an email to log in with.
        email = changes.get("email", user.email)
        if data.password is not None:
            if email is None:
                raise _password_needs_email()
            changes["password_hash"] = await self.passwords.hash(data.password)
        elif email is None and user.password_hash is not None:
            raise ValidationFailedError(
                "email is required while the user has a password",
                fields={"email": "is required while the user has a password"},
            )
        if not changes:
            return user
        try:
            updated = await self.users.update(user, changes)
        except EmailInUseError:
            raise EmailTakenError() from None
        if not updated:
            raise _not_found()  # deleted since it was read
        return user

    async def delete(self, caller: Principal, user_id: str) -> None:
        if not await self.users.delete(_accessible_id(caller, user_id)):
            raise _not_found()

    async def ensure_admin(self, email: str, password: str) -> None:
        """Make ``email`` an admin whose password is ``password``; safe to run concurrently.

        The configuration is authoritative: an existing account with this email is promoted
        and its password reset, so that whoever registered the address first gains nothing.
        """
        user = await self.users.get_by_email(email)
        if user is None:
            password_hash = await self.passwords.hash(password)
            try:
                await self.users.add(
                    name=ADMIN_NAME, email=email, password_hash=password_hash, role=Role.ADMIN
                )
            except EmailInUseError:
                user = await self.users.get_by_email(email)  # another replica created it
            else:
                logger.info("created the configured admin", extra={"email": email})
                return
        if user is None:
            raise RuntimeError("the configured admin was deleted while it was being ensured")
        changes: UserChanges = {}
        if user.role is not Role.ADMIN:
            changes["role"] = Role.ADMIN
        if user.password_hash is None or not await self.passwords.verify(
            user.password_hash, password
        ):
            changes["password_hash"] = await self.passwords.hash(password)
        if changes:
            await self.users.update(user, changes)
            logger.info("updated the configured admin", extra={"email": email})

    async def _find(self, user_id: UUID) -> User:
        user = await self.users.get(user_id)
        if user is None:
            raise _not_found()
        return user


class AuthService:
    """Password login: one answer for every failure, in comparable time."""

    def __init__(self, users: UserStore, passwords: Passwords, tokens: TokenIssuer) -> None:
        self.users = users
        self.passwords = passwords
        self.tokens = tokens

    async def log_in(self, email: str, password: str) -> IssuedToken:
        if len(password) > PASSWORD_MAX_LENGTH:
            raise InvalidCredentialsError()  # no account can have it: skip the hashing
        user = await self._user_with_email(email)
        if user is None or user.password_hash is None:
            await self.passwords.verify_dummy(password)
            raise InvalidCredentialsError()
        if not await self.passwords.verify(user.password_hash, password):
            raise InvalidCredentialsError()
        if self.passwords.needs_rehash(user.password_hash):
            # The cost parameters were raised since this hash was made: upgrade it now.
            await self.users.update(user, {"password_hash": await self.passwords.hash(password)})
        return self.tokens.issue(str(user.id), user.role.value)

    async def _user_with_email(self, raw: str) -> User | None:
        try:
            email = normalize_email(raw)
        except ValueError:
            return None  # no account can have a malformed address
        return await self.users.get_by_email(email)


def _accessible_id(caller: Principal, raw_id: str) -> UUID:
    """The id ``caller`` may act on: their own, or any for an admin.

    A customer naming another id is refused whether or not it exists, so that the answer
    does not reveal which ids exist; for an admin, a malformed id simply names nothing.
    """
    user_id = _as_uuid(raw_id)
    if caller.is_admin:
        if user_id is None:
            raise _not_found()
        return user_id
    if user_id is None or user_id != _as_uuid(caller.subject):
        raise ForbiddenError("You may only access your own user.")
    return user_id


def _as_uuid(raw: str) -> UUID | None:
    try:
        return UUID(raw)
    except ValueError:
        return None


def _not_found() -> NotFoundError:
    return NotFoundError("No user has this id.")


def _password_needs_email() -> ValidationFailedError:
    return ValidationFailedError(
        "password requires an email", fields={"password": "requires an email"}
    )
