"""In-memory stand-ins for orders-service's upstreams (the catalog, the user directory, the
caller's standing), for unit tests only.

They answer as the real clients behind ``orders_service.ports`` and ``api_shared.standing``
do when their service is up: from a set. Integration and end-to-end tests talk to the real
services instead (``neighbours``; ``gates`` for races and outages): the platform's rule is
that fakes belong in unit tests, where a rule is tested without I/O.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable
from uuid import UUID

from api_shared.auth.principal import Principal
from api_shared.errors import UnauthenticatedError
from api_shared.standing import KEY_REFUSED


class FakeBookCatalog:
    """A catalog holding ``books``; ``hold()`` parks callers until released (to stage races)."""

    def __init__(self, books: Iterable[str] = ()) -> None:
        self.books = set(books)
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
        return {book_id for book_id in book_ids if book_id not in self.books}


class FakeUserDirectory:
    """A user directory holding ``users``; records every lookup and its credentials."""

    def __init__(self, users: Iterable[UUID] = ()) -> None:
        self.users = set(users)
        self.calls: list[tuple[UUID, str]] = []

    async def exists(self, user_id: UUID, *, authorization: str) -> bool:
        self.calls.append((user_id, authorization))
        return user_id in self.users


class FakeStanding:
    """users-service's word on callers, as a token's claims say it; API keys are registered
    in ``api_keys`` (key → principal), any other is refused as users-service would."""

    def __init__(self, api_keys: dict[str, Principal] | None = None) -> None:
        self.api_keys = dict(api_keys or {})

    async def confirm(self, principal: Principal, authorization: str) -> Principal:
        return principal

    async def resolve_api_key(self, key: str) -> Principal:
        principal = self.api_keys.get(key)
        if principal is None:
            raise UnauthenticatedError(KEY_REFUSED, token_sent=True)
        return principal
