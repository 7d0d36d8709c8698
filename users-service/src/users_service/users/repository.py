"""Tortoise queries for users: the ``UserStore`` of ``users_service.users.ports``; nothing
else of the users (but bulk seeding) touches the ORM.

Every write that changes how many users have a role (sign-up, delete, role change) also
changes ``user_counts`` in the same transaction, so ``page()`` reads an exact total in O(1).
Lock order, to keep concurrent writers deadlock-free: the user's row first, then the count
rows in role order.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from tortoise import timezone
from tortoise.exceptions import IntegrityError
from tortoise.expressions import F, Subquery
from tortoise.queryset import QuerySet

from api_shared.auth import Role
from api_shared.paging import page_order
from api_shared.statements import Statements
from api_shared.transactions import in_transaction
from users_service.models import User, UserCount
from users_service.users.events import UserEvents
from users_service.users.ports import EmailInUseError, UserChanges, UserRow

# A plain index scan reads the table row of every skipped entry; past this many, the
# deferred join's index-only scan (a few hundred entries per index page) costs less.
DEFERRED_JOIN_MIN_OFFSET = 100
# A page's columns: what the public representation shows (schemas.UserPublic).
PUBLIC_FIELDS = (
    "id", "name", "email", "email_verified", "role", "is_active", "created_at", "updated_at"
)  # fmt: skip
_STATEMENTS = Statements()  # the page's shapes and the counts'
# Changes the public representation shows: each records ``users.user.updated``.
PUBLIC_CHANGES = frozenset({"name", "email", "email_verified", "role", "is_active"})


class UserRepository:
    def __init__(self, events: UserEvents | None = None) -> None:
        # Recorded in the transaction of each sign-up and deletion (the shared outbox).
        self.events = events or UserEvents()

    async def get(self, user_id: UUID) -> User | None:
        return await User.get_or_none(id=user_id)

    async def get_by_email(self, email: str) -> User | None:
        return await User.get_or_none(email=email)

    async def add(
        self, *, name: str, email: str | None, password_hash: str | None, role: Role
    ) -> User:
        try:
            async with in_transaction():
                user = await User.create(
                    name=name, email=email, password_hash=password_hash, role=role
                )
                await self.events.created(user)
                await add_to_count(role, +1)  # last: the count row stays locked the shortest time
                return user
        except IntegrityError:
            # The index, not a prior lookup, decides: two concurrent sign-ups cannot both win.
            if email is None:
                raise
            raise EmailInUseError from None

    async def update(self, user: User, changes: UserChanges) -> bool:
        """Write ``changes`` to the user's row and to ``user``; False when the row is gone."""
        values = {**changes, "updated_at": timezone.now()}
        try:
            async with in_transaction():
                if "role" in changes:
                    rows = await _update_with_role(user, values, changes["role"])
                else:
                    rows = await User.filter(id=user.id).update(**values)
                if rows:
                    user.update_from_dict(values)
                    if PUBLIC_CHANGES & changes.keys():
                        # Services acting on a user's standing (webhooks) are told of it.
                        await self.events.updated(user)
        except IntegrityError:
            if "email" not in changes:
                raise
            raise EmailInUseError from None
        return rows > 0

    async def claim(self, user: User, changes: UserChanges) -> bool:
        """``update``, recording ``users.user.claimed`` first: consumers drop the previous
        holder's endpoints and streams before they read the account's new state."""
        try:
            async with in_transaction():
                await self.events.claimed(user.id)
                if not await self.update(user, changes):
                    raise _GoneError  # rolls the event back with the rest
        except _GoneError:
            return False
        return True

    async def delete(self, user_id: UUID) -> bool:
        """Delete the user; False when there was none."""
        async with in_transaction():
            role = await _locked_role(user_id)
            if role is None:
                return False
            await User.filter(id=user_id).delete()
            await self.events.deleted(user_id)
            await add_to_count(role, -1)
        return True

    async def page(
        self, *, role: Role | None, is_active: bool | None, order_by: str, limit: int, offset: int
    ) -> tuple[Sequence[UserRow], int]:
        """One page of users (their public fields) and the number matching the filters.

        The hottest read of the service: rows as values, on SQL built once per shape.
        """
        values: list[object] = [v for v in (role and role.value, is_active) if v is not None]
        values += [limit, offset] if offset else [limit]  # Tortoise leaves out OFFSET 0
        shape = (role is not None, is_active is not None, order_by, offset > 0,
                 offset >= DEFERRED_JOIN_MIN_OFFSET)  # fmt: skip
        users = await _STATEMENTS.values(
            User,
            shape,
            values,
            lambda: page_query(
                role=role, is_active=is_active, order_by=order_by, limit=limit, offset=offset
            ).values(*PUBLIC_FIELDS),
        )
        if is_active is None:
            return users, await self.count(role)
        suspended = await self.count_suspended(role)
        return users, (await self.count(role) - suspended) if is_active else suspended

    async def count(self, role: Role | None = None) -> int:
        """How many users have ``role`` (every user when None), from ``user_counts``: one
        statement of a few rows on every list request, built once."""
        rows = await _STATEMENTS.values(
            UserCount, "all", [], lambda: UserCount.all().values("role", "n")
        )
        return sum(int(row["n"]) for row in rows if role is None or row["role"] == role.value)

    async def count_suspended(self, role: Role | None = None) -> int:
        """How many suspended users have ``role``: a count over the partial index of
        suspended users (``users_inactive_role_created_id``), small as suspensions are rare.
        Active users are the role's total minus these, so neither total scans ``users``."""
        query = User.filter(is_active=False)
        return await (query if role is None else query.filter(role=role)).count()


class _GoneError(Exception):
    """The user's row is gone: the transaction rolls back."""


def page_query(
    *, role: Role | None, is_active: bool | None = None, order_by: str, limit: int, offset: int
) -> QuerySet[User]:
    """The query of one page of users (``bench/users_list.py`` EXPLAINs its SQL too).

    ``order_by`` is a model field, ``-`` prefixed for descending; ``id`` breaks ties in
    the same direction, so that the composite indexes of the model serve the query.
    Past ``DEFERRED_JOIN_MIN_OFFSET`` the page's ids are found first, by a scan of the
    index alone (a deferred join): rows skipped by the offset are never read from the
    table, only their index entries. Nearer the start a plain index scan is cheaper.
    """
    query = User.all() if role is None else User.filter(role=role)
    if is_active is not None:
        query = query.filter(is_active=is_active)
    ordering = page_order(order_by)
    page = query.order_by(*ordering).offset(offset).limit(limit)
    if offset < DEFERRED_JOIN_MIN_OFFSET:
        return page
    return User.filter(id__in=Subquery(page.values("id"))).order_by(*ordering)


async def add_to_count(role: Role, delta: int) -> None:
    """Add ``delta`` to the count of ``role``, atomically (``n = n + delta`` in the database).

    Call inside the transaction of the write being counted. Migrations create the row of
    every role (a role added to the enum needs one too); creating it here is a fallback.
    """
    if not await UserCount.filter(role=role).update(n=F("n") + delta):
        await UserCount.create(role=role, n=delta)


async def _locked_role(user_id: UUID) -> Role | None:
    """The user's current role, its row locked until the transaction ends (PostgreSQL)."""
    # only(), not values(): Tortoise drops FOR UPDATE from values() queries.
    user = await User.filter(id=user_id).select_for_update().only("id", "role").first()
    return user.role if user is not None else None


async def _update_with_role(user: User, values: dict[str, object], role: Role) -> int:
    """Update the row and move the user between the role counts, in one transaction."""
    async with in_transaction():
        old_role = await _locked_role(user.id)
        if old_role is None:
            return 0
        rows = await User.filter(id=user.id).update(**values)
        if old_role != role:
            for changed, delta in sorted(((old_role, -1), (role, +1))):
                await add_to_count(changed, delta)
        return rows
