"""What orders-service needs from other services, as small interfaces.

The app wires the HTTP clients of ``orders_service.clients``; tests pass in-memory fakes.
Implementations raise ``api_shared.errors.UnavailableError`` when they cannot answer
(unreachable, too slow, or an answer that makes no sense), and nothing else.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol
from uuid import UUID


class BookCatalog(Protocol):
    """books-graphql: which books exist."""

    async def unknown(self, book_ids: Collection[str]) -> set[str]:
        """The ids among ``book_ids`` that the catalog does not have (empty: all exist)."""
        ...


class UserDirectory(Protocol):
    """users-service: which users exist."""

    async def exists(self, user_id: UUID, *, authorization: str) -> bool:
        """Whether the user exists, asked with the caller's own ``Authorization`` header."""
        ...
