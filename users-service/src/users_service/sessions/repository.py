"""Tortoise queries for sessions and their refresh tokens: the ``SessionStore`` of
``users_service.sessions.ports``.

Exactly one of two concurrent refreshes with the same token wins: spending a token is one
conditional UPDATE (``… WHERE token_hash = $1 AND spent_at IS NULL``) whose row count says
who won; the loser's UPDATE waits for the winner's transaction and then matches no row.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, cast
from uuid import UUID

from tortoise.expressions import Q

from api_shared.auth import Role
from api_shared.paging import page_order
from api_shared.statements import Statements
from api_shared.transactions import in_transaction
from users_service.models import RefreshToken, Session, User
from users_service.sessions.ports import Opening, Spend, Standing, is_live

_WITH_USER = Statements()
_USER_COLUMNS = "sessions__user"  # how Tortoise prefixes the joined user's columns
_STANDING = Statements()


class SessionRepository:
    def atomic(self) -> AbstractAsyncContextManager[Any]:
        """One transaction around the calls made inside it."""
        return in_transaction()

    async def open(self, opening: Opening) -> None:
        async with in_transaction():
            await Session.create(
                id=opening.session_id,
                user_id=opening.user_id,
                created_at=opening.now,
                last_used_at=opening.now,
                expires_at=opening.expires_at,
                user_agent=opening.user_agent,
                address=opening.address,
            )
            await RefreshToken.create(
                token_hash=opening.token_hash,
                session_id=opening.session_id,
                created_at=opening.now,
                expires_at=opening.token_expires_at,
            )

    async def spend(self, token_hash: str, session_id: UUID, now: datetime) -> Spend:
        spent = await RefreshToken.filter(
            token_hash=token_hash, session_id=session_id, spent_at=None, expires_at__gt=now
        ).update(spent_at=now)
        if spent:
            return Spend.SPENT
        token = await RefreshToken.filter(token_hash=token_hash, session_id=session_id).first()
        if token is not None and token.spent_at is not None:
            return Spend.ALREADY_SPENT
        return Spend.UNKNOWN

    async def renew(
        self, session_id: UUID, token_hash: str, now: datetime, token_expires_at: datetime
    ) -> Session | None:
        """Add the session's next token when the session is live; the session row either way.

        The row is locked first (PostgreSQL), so a revocation cannot slip in between.
        """
        session = await Session.filter(id=session_id).select_for_update().first()
        if session is None or not is_live(session, now):
            return session
        await Session.filter(id=session_id).update(last_used_at=now)
        session.last_used_at = now
        await RefreshToken.create(
            token_hash=token_hash,
            session_id=session_id,
            created_at=now,
            expires_at=min(token_expires_at, session.expires_at),
        )
        return session

    async def get(self, session_id: UUID) -> Session | None:
        return await Session.get_or_none(id=session_id)

    async def with_user(self, session_id: UUID) -> tuple[Session, User] | None:
        """The session and its user in one primary-key read (a join): the caller check, on
        every authenticated request, so its SQL is built once."""
        values: list[object] = [str(session_id), 1]
        found = await _WITH_USER.instances(
            Session,
            "by id",
            values,
            lambda: Session.filter(id=session_id).select_related("user").limit(1),
            (User, _USER_COLUMNS),
        )
        for session, user in found:
            return cast(Session, session), cast(User, user)
        return None

    async def standing(self, session_id: UUID) -> Standing | None:
        """The caller check's five columns, for routes that need no more of the user than its
        role: no model instance, a third of ``with_user``'s columns."""
        rows = await _STANDING.values(
            Session,
            "by id",
            [str(session_id), 1],
            lambda: (
                Session.filter(id=session_id)
                .limit(1)
                .values(
                    "revoked_at",
                    "expires_at",
                    "user_id",
                    role="user__role",
                    is_active="user__is_active",
                )
            ),
        )
        for row in rows:
            if row["role"] is None:  # a left join: the user is gone (their sessions go with it)
                return None
            return Standing(
                row["user_id"],
                Role(row["role"]),
                bool(row["is_active"]),  # SQLite's 0 or 1
                row["revoked_at"],
                row["expires_at"],
            )
        return None

    async def session_of_token(self, token_hash: str, session_id: UUID) -> Session | None:
        token = await RefreshToken.filter(token_hash=token_hash, session_id=session_id).first()
        return await self.get(session_id) if token is not None else None

    async def holds(self, token_hash: str, session_id: UUID) -> bool:
        """Whether ``token_hash`` is a refresh token of ``session_id`` (spent or not)."""
        return await RefreshToken.exists(token_hash=token_hash, session_id=session_id)

    async def revoke(self, session_id: UUID, now: datetime, *, user_id: UUID | None = None) -> bool:
        """End one live session (only ``user_id``'s when given); False when there was none."""
        query = Session.filter(id=session_id, revoked_at=None, expires_at__gt=now)
        if user_id is not None:
            query = query.filter(user_id=user_id)
        return await query.update(revoked_at=now) > 0

    async def revoke_all(self, user_id: UUID, now: datetime, *, keep: UUID | None = None) -> int:
        """End every live session of the user but ``keep``; how many ended."""
        query = Session.filter(user_id=user_id, revoked_at=None, expires_at__gt=now)
        if keep is not None:
            query = query.exclude(id=keep)
        return await query.update(revoked_at=now)

    async def page(
        self, user_id: UUID, now: datetime, *, order_by: str, limit: int, offset: int
    ) -> tuple[list[Session], int]:
        """One page of the user's live sessions, and how many there are (a user has few)."""
        live = Session.filter(user_id=user_id, revoked_at=None, expires_at__gt=now)
        ordering = page_order(order_by)
        sessions = await live.order_by(*ordering).offset(offset).limit(limit)
        return sessions, await live.count()

    async def purge(self, now: datetime) -> int:
        """Delete ended sessions (ON DELETE CASCADE takes their tokens) and expired tokens."""
        ended = await Session.filter(
            Q(revoked_at__not_isnull=True) | Q(expires_at__lte=now)
        ).delete()
        expired = await RefreshToken.filter(expires_at__lte=now).delete()
        return int(ended) + int(expired)
