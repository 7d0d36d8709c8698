"""In-memory stand-ins for orders-service's upstreams (the catalog, the user directory, the
caller's standing), for unit tests only.

They behave like the real clients as ``orders_service.upstreams`` and ``api_shared.standing``
describe them: answers from a set, and ``UnavailableError`` when switched off. Integration
and end-to-end tests talk to the real services instead (``neighbours``, ``gates``): the
platform's rule is that fakes belong in unit tests, where a rule is tested without I/O.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable
from uuid import UUID

from api_shared.auth import Principal
from api_shared.errors import ForbiddenError, UnauthenticatedError, UnavailableError


class FakeBookCatalog:
    """A catalog holding ``books``; ``hold()`` parks callers until released (to stage races)."""

    def __init__(self, books: Iterable[str] = ()) -> None:
        self.books = set(books)
        self.available = True
        self.calls: list[list[str]] = []
        self.entered = asyncio.Event()
        self._gate: asyncio.Event | None = None

    def hold(self) -> asyncio.Event:
        """Make every call wait for the returned event; ``entered`` is set when one waits."""
        self.entered.clear()
        self._gate = asyncio.Event()
        return self._gate

    async def unknown(self, book_ids: Collection[str]) -> set[str]:
        self.calls.append(list(book_ids))
        if self._gate is not None:
            self.entered.set()
            await self._gate.wait()
        if not self.available:
            raise UnavailableError("The book catalog is unavailable; try again shortly.")
        return {book_id for book_id in book_ids if book_id not in self.books}

    def reset(self, books: Iterable[str]) -> None:
        self.books, self.available, self._gate = set(books), True, None
        self.calls.clear()
        self.entered.clear()


class FakeUserDirectory:
    """A user directory holding ``users``; records every lookup and its credentials."""

    def __init__(self, users: Iterable[UUID] = ()) -> None:
        self.users = set(users)
        self.available = True
        self.calls: list[tuple[UUID, str]] = []

    async def exists(self, user_id: UUID, *, authorization: str) -> bool:
        self.calls.append((user_id, authorization))
        if not self.available:
            raise UnavailableError("The user directory is unavailable; try again shortly.")
        return user_id in self.users

    def reset(self) -> None:
        self.users.clear()
        self.available = True
        self.calls.clear()


class FakeStanding:
    """users-service's word on callers: each token's claims stand, unless a test says that a
    subject's session ended (``ended``), its account is suspended (``suspended``) or its role
    is now another (``roles``). Records every subject confirmed."""

    def __init__(self) -> None:
        self.ended: set[str] = set()
        self.suspended: set[str] = set()
        self.roles: dict[str, str] = {}
        self.available = True
        self.calls: list[str] = []

    async def confirm(self, principal: Principal, authorization: str) -> Principal:
        self.calls.append(principal.subject)
        if not self.available:
            raise UnavailableError("The user directory is unavailable; try again shortly.")
        if principal.subject in self.ended:
            raise UnauthenticatedError("This token's session has ended.", token_sent=True)
        if principal.subject in self.suspended:
            raise ForbiddenError("This account is suspended.")
        role = self.roles.get(principal.subject, principal.role)
        return Principal(principal.subject, role, principal.session_id)

    def reset(self) -> None:
        self.ended.clear()
        self.suspended.clear()
        self.roles.clear()
        self.available = True
        self.calls.clear()
