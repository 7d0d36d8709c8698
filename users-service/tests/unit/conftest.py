"""Fakes of the unit tests: in-memory UserStore and SessionStore (the real ones are tested on
the database) and a clock the test moves. Test modules get them through the fixtures below."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from api_shared.auth import Role
from api_shared.ratelimit import Limiter, MemoryBuckets
from users_service.budgets import Throttle
from users_service.models import Session, User
from users_service.sessions.ports import Opening, Spend, Standing, is_live
from users_service.settings import Settings
from users_service.users.ports import EmailInUseError, UserChanges


@dataclass
class StoredToken:
    session_id: UUID
    expires_at: datetime
    spent_at: datetime | None = None


class FakeSessions:
    """Sessions and tokens in dictionaries, with the store's semantics."""

    def __init__(self, users: dict[UUID, User], *, implicit: bool = False) -> None:
        """``implicit``: every user has an open session whose id is the user's, opened when
        first asked for (for tests of user rules, whose callers never log in)."""
        self.users = users
        self.implicit = implicit
        self.sessions: dict[UUID, Session] = {}
        self.tokens: dict[str, StoredToken] = {}

    @contextlib.asynccontextmanager
    async def atomic(self) -> AsyncIterator[None]:
        yield

    async def open(self, opening: Opening) -> None:
        session = Session(
            id=opening.session_id,
            created_at=opening.now,
            last_used_at=opening.now,
            expires_at=opening.expires_at,
            revoked_at=None,
            user_agent=opening.user_agent,
            address=opening.address,
        )
        session.user_id = opening.user_id  # the ORM (not initialised here) sets it from ``user``
        self.sessions[opening.session_id] = session
        self.tokens[opening.token_hash] = StoredToken(opening.session_id, opening.token_expires_at)

    async def spend(self, token_hash: str, session_id: UUID, now: datetime) -> Spend:
        token = self.tokens.get(token_hash)
        if token is None or token.session_id != session_id:
            return Spend.UNKNOWN
        if token.spent_at is not None:
            return Spend.ALREADY_SPENT
        if token.expires_at <= now:
            return Spend.UNKNOWN
        token.spent_at = now
        return Spend.SPENT

    async def renew(
        self, session_id: UUID, token_hash: str, now: datetime, token_expires_at: datetime
    ) -> Session | None:
        session = self.sessions.get(session_id)
        if session is None or not is_live(session, now):
            return session
        session.last_used_at = now
        self.tokens[token_hash] = StoredToken(session_id, min(token_expires_at, session.expires_at))
        return session

    async def with_user(self, session_id: UUID) -> tuple[Session, User] | None:
        if self.implicit and session_id not in self.sessions and session_id in self.users:
            now = datetime.now(UTC)
            hour_later = now + timedelta(hours=1)
            opening = Opening(
                session_id=session_id,
                user_id=session_id,
                token_hash=f"implicit-{session_id}",
                now=now,
                token_expires_at=hour_later,
                expires_at=hour_later,
                user_agent=None,
                address=None,
            )
            await self.open(opening)
        session = self.sessions.get(session_id)
        user = self.users.get(session.user_id) if session is not None else None
        return (session, user) if session is not None and user is not None else None

    async def standing(self, session_id: UUID) -> Standing | None:
        found = await self.with_user(session_id)
        return Standing.of(*found) if found is not None else None

    async def session_of_token(self, token_hash: str, session_id: UUID) -> Session | None:
        token = self.tokens.get(token_hash)
        if token is None or token.session_id != session_id:
            return None
        return self.sessions.get(session_id)

    async def holds(self, token_hash: str, session_id: UUID) -> bool:
        token = self.tokens.get(token_hash)
        return token is not None and token.session_id == session_id

    async def revoke(self, session_id: UUID, now: datetime, *, user_id: UUID | None = None) -> bool:
        session = self.sessions.get(session_id)
        if session is None or not is_live(session, now):
            return False
        if user_id is not None and session.user_id != user_id:
            return False
        session.revoked_at = now
        return True

    async def revoke_all(self, user_id: UUID, now: datetime, *, keep: UUID | None = None) -> int:
        ended = 0
        for session in self.sessions.values():
            if session.user_id == user_id and session.id != keep and is_live(session, now):
                session.revoked_at = now
                ended += 1
        return ended

    async def page(
        self, user_id: UUID, now: datetime, *, order_by: str, limit: int, offset: int
    ) -> tuple[list[Session], int]:
        live = [s for s in self.sessions.values() if s.user_id == user_id and is_live(s, now)]
        field = order_by.lstrip("-")
        live.sort(key=lambda s: (getattr(s, field), s.id), reverse=order_by.startswith("-"))
        return live[offset : offset + limit], len(live)

    async def purge(self, now: datetime) -> int:
        ended = [key for key, s in self.sessions.items() if not is_live(s, now)]
        for key in ended:
            del self.sessions[key]
        dead = [h for h, t in self.tokens.items() if t.session_id in ended or t.expires_at <= now]
        for token_hash in dead:
            del self.tokens[token_hash]
        return len(ended) + len(dead)


class FakeUsers:
    """An in-memory UserStore with the database's one rule: emails are unique."""

    def __init__(self) -> None:
        self.rows: dict[UUID, User] = {}
        self.writes = 0
        self.page_calls: list[dict[str, Any]] = []

    async def get(self, user_id: UUID) -> User | None:
        return self.rows.get(user_id)

    async def get_by_email(self, email: str) -> User | None:
        return next((user for user in self.rows.values() if user.email == email), None)

    async def add(
        self, *, name: str, email: str | None, password_hash: str | None, role: Role
    ) -> User:
        if email is not None and await self.get_by_email(email) is not None:
            raise EmailInUseError
        now = datetime.now(UTC)
        fields = {"name": name, "email": email, "password_hash": password_hash, "role": role}
        user = User(id=uuid.uuid4(), created_at=now, updated_at=now, **fields)
        self.rows[user.id] = user
        self.writes += 1
        return user

    async def update(self, user: User, changes: UserChanges) -> bool:
        if user.id not in self.rows:
            return False
        email = changes.get("email")
        if email is not None and any(
            other.email == email and other.id != user.id for other in self.rows.values()
        ):
            raise EmailInUseError
        for name, value in changes.items():
            setattr(user, name, value)
        self.writes += 1
        return True

    async def delete(self, user_id: UUID) -> bool:
        return self.rows.pop(user_id, None) is not None

    async def page(
        self, *, role: Role | None, is_active: bool | None, order_by: str, limit: int, offset: int
    ) -> tuple[list[User], int]:
        call = {"role": role, "order_by": order_by, "limit": limit, "offset": offset}
        self.page_calls.append(call if is_active is None else {**call, "is_active": is_active})
        return [], 0


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def fake_sessions() -> Any:
    """The FakeSessions class: ``fake_sessions(users_by_id)``."""
    return FakeSessions


@pytest.fixture
def fake_users() -> Any:
    """The FakeUsers class: ``fake_users()``."""
    return FakeUsers


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def throttle() -> Throttle:
    """users-service's budgets as configured by default, in this process's memory."""
    return Throttle(Limiter(MemoryBuckets()), Settings().budgets)
