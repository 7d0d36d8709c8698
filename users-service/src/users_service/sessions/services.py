"""Sessions: refresh-token rotation with reuse detection (RFC 9700 §4.14), logout, and the
check of the caller behind every access token users-service accepts.

A session (a refresh-token family) starts at login. Each refresh spends the presented token
and hands out the next one; presenting a spent token again means that two parties hold the
family (a thief and its owner), so the whole session ends. Access tokens carry the session
id (``sid``): users-service refuses them once their session has ended; the gateway and other
services, which do not read this database, accept them until they expire.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

from api_shared.auth import Principal
from api_shared.errors import (
    ForbiddenError,
    InvalidCredentialsError,
    NotFoundError,
    UnauthenticatedError,
)
from api_shared.ids import parse_id
from api_shared.paging import PageRequest
from api_shared.standing import KEY_REFUSED
from users_service.budgets import Throttle
from users_service.models import Session, User
from users_service.sessions.ports import (
    Client,
    Opening,
    SessionStore,
    SessionTokens,
    Spend,
    Standing,
    UserReader,
    is_live,
)
from users_service.sessions.tokens import (
    TokenIssuer,
    new_refresh_token,
    refresh_token_hash,
    refresh_token_session,
)

logger = logging.getLogger(__name__)

SESSION_SORT_FIELDS = {"createdAt": "created_at", "lastUsedAt": "last_used_at"}
SESSION_SORTS = tuple(SESSION_SORT_FIELDS)
SESSION_DEFAULT_SORT = "-lastUsedAt"
SUSPENDED_MESSAGE = "This account is suspended."
# A key's standing has no session to end: its key was checked when it was resolved.
KEYS_HAVE_NO_SESSION_END = datetime.max.replace(tzinfo=UTC)


def utc_now() -> datetime:
    return datetime.now(UTC)


def refuse_suspended(user: User | Standing) -> None:
    """FORBIDDEN for a suspended account: the one rule for login, refresh and every token."""
    if not user.is_active:
        raise ForbiddenError(SUSPENDED_MESSAGE)


class SessionService:
    def __init__(
        self,
        store: SessionStore,
        users: UserReader,
        tokens: TokenIssuer,
        throttle: Throttle,
        *,
        refresh_ttl_s: int,
        max_lifetime_s: int,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.store = store
        self.users = users
        self.tokens = tokens
        self.throttle = throttle
        self.refresh_ttl = timedelta(seconds=refresh_ttl_s)
        self.max_lifetime = timedelta(seconds=max_lifetime_s)
        self.clock = clock

    async def open(self, user: User, client: Client) -> SessionTokens:
        """Start a session for ``user`` (whose password was just checked)."""
        now = self.clock()
        session_id = uuid4()
        refresh_token = new_refresh_token(session_id)
        expires_at = now + self.max_lifetime
        token_expires_at = min(now + self.refresh_ttl, expires_at)
        await self.store.open(
            Opening(
                session_id=session_id,
                user_id=user.id,
                token_hash=refresh_token_hash(refresh_token),
                now=now,
                token_expires_at=token_expires_at,
                expires_at=expires_at,
                user_agent=client.user_agent,
                address=client.address,
            )
        )
        return self._tokens(user, session_id, refresh_token, token_expires_at, now, now)

    async def refresh(self, refresh_token: str) -> SessionTokens:
        """Exchange a live refresh token for new tokens; a spent one ends its session."""
        session_id = refresh_token_session(refresh_token)
        if session_id is None:
            raise _invalid_refresh_token()
        token_hash = refresh_token_hash(refresh_token)
        if await self.store.holds(token_hash, session_id):
            # Charged to the session only with one of its own tokens: a stranger who read a
            # session id (it is in every access token) cannot spend the owner's budget.
            await self.throttle.refresh(session_id)
        now = self.clock()
        next_token = new_refresh_token(session_id)
        token_expires_at = now + self.refresh_ttl
        session: Session | None = None
        # Spending and renewing in one transaction: never a spent token without a successor.
        async with self.store.atomic():
            spent = await self.store.spend(token_hash, session_id, now)
            if spent is Spend.SPENT:
                session = await self.store.renew(
                    session_id, refresh_token_hash(next_token), now, token_expires_at
                )
        if spent is Spend.ALREADY_SPENT:
            await self._end_on_reuse(session_id, now)
            raise _invalid_refresh_token()
        user = await self.users.get(session.user_id) if session is not None else None
        if session is None or user is None:
            raise _invalid_refresh_token()
        refuse_suspended(user)  # the token was checked: saying so reveals nothing new
        if not is_live(session, now):
            raise _invalid_refresh_token()
        # The person authenticated at the session's login: a refresh proves no more.
        return self._tokens(
            user,
            session_id,
            next_token,
            min(token_expires_at, session.expires_at),
            now,
            session.created_at,
        )

    async def log_out(self, refresh_token: str) -> None:
        """End the session of ``refresh_token``; nothing happens for an unknown one."""
        session_id = refresh_token_session(refresh_token)
        if session_id is None:
            return
        now = self.clock()
        if await self.store.session_of_token(refresh_token_hash(refresh_token), session_id):
            await self.store.revoke(session_id, now)

    async def log_out_everywhere(self, caller: User) -> int:
        return await self.store.revoke_all(caller.id, self.clock())

    async def end_all(self, user_id: UUID, *, keep: str | None = None) -> int:
        """End every session of a user whose credentials changed, but ``keep`` (a ``sid``)."""
        return await self.store.revoke_all(user_id, self.clock(), keep=parse_id(keep))

    async def end(self, caller: User, raw_id: str) -> None:
        """End one of the caller's sessions; another's, or an ended one, is NOT_FOUND."""
        session_id = parse_id(raw_id)
        if session_id is None or not await self.store.revoke(
            session_id, self.clock(), user_id=caller.id
        ):
            raise NotFoundError("You have no open session with this id.")

    async def list(self, caller: User, page: PageRequest) -> tuple[Sequence[Session], int]:
        """One page of the caller's open sessions, and how many there are."""
        return await self.store.page(
            caller.id,
            self.clock(),
            order_by=page.sort.ordering(SESSION_SORT_FIELDS),
            limit=page.limit,
            offset=page.offset,
        )

    async def resolve_caller(self, principal: Principal) -> User:
        """The caller's current row, if their token still stands: its session open (a read by
        primary key, with the user joined) and the account neither deleted nor suspended.

        An API key has no session: its owner's row, active (the key itself was resolved
        just before, by api_shared.auth.authenticate)."""
        if principal.is_api_key:
            return await self._key_owner(principal)
        session_id = parse_id(principal.session_id)
        found = await self.store.with_user(session_id) if session_id is not None else None
        if found is None:
            raise _session_ended()
        session, user = found
        self._check(principal, Standing.of(session, user))
        return user

    async def caller_standing(self, principal: Principal) -> Standing:
        """``resolve_caller``'s check, reading only the caller's id, role and standing: for
        routes that decide by the role alone (the users list)."""
        if principal.is_api_key:
            owner = await self._key_owner(principal)
            return Standing(owner.id, owner.role, owner.is_active, None, KEYS_HAVE_NO_SESSION_END)
        session_id = parse_id(principal.session_id)
        found = await self.store.standing(session_id) if session_id is not None else None
        return self._check(principal, found)

    async def _key_owner(self, principal: Principal) -> User:
        """An API key's owner, active; 401 when the account is gone (its keys with it)."""
        owner_id = parse_id(principal.subject)
        owner = await self.users.get(owner_id) if owner_id is not None else None
        if owner is None:
            raise UnauthenticatedError(KEY_REFUSED, token_sent=True)
        refuse_suspended(owner)
        return owner

    def _check(self, principal: Principal, found: Standing | None) -> Standing:
        """The rules of the caller check: the token's session exists and is the subject's
        (else 401), the account is not suspended (403), the session is live (401)."""
        if found is None or str(found.user_id) != principal.subject:
            raise _session_ended()
        refuse_suspended(found)
        if not is_live(found, self.clock()):
            raise _session_ended()
        return found

    async def purge(self) -> int:
        return await self.store.purge(self.clock())

    async def _end_on_reuse(self, session_id: UUID, now: datetime) -> None:
        await self.store.revoke(session_id, now)
        found = await self.store.with_user(session_id)
        # A security event: a refresh token was presented twice, so it leaked (or a client
        # raced itself); the session is over for everyone holding it.
        logger.warning(
            "refresh token reuse: session revoked",
            extra={
                "event": "refresh_token_reuse",
                "session_id": str(session_id),
                "user_id": str(found[1].id) if found else None,
            },
        )

    def _tokens(
        self,
        user: User,
        session_id: UUID,
        refresh_token: str,
        refresh_expires_at: datetime,
        now: datetime,
        logged_in_at: datetime,
    ) -> SessionTokens:
        access = self.tokens.issue(str(user.id), user.role.value, session_id, logged_in_at)
        return SessionTokens(
            access_token=access.access_token,
            expires_in=access.expires_in,
            refresh_token=refresh_token,
            refresh_expires_in=max(1, int((refresh_expires_at - now).total_seconds())),
        )


def _invalid_refresh_token() -> InvalidCredentialsError:
    return InvalidCredentialsError("The refresh token is not valid.")


def _session_ended() -> UnauthenticatedError:
    return UnauthenticatedError("This token's session has ended; log in again.", token_sent=True)
