"""What the catalog's rules need of storage, as a small interface.

``books_graphql.repository`` implements it on Tortoise; the tests, in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol
from uuid import UUID

from books_graphql.catalog import Book


class BookStore(Protocol):
    """The queries the rules need (``BookRepository``, or a fake in tests)."""

    async def list_all(self) -> list[Book]:
        """Every book, by title (case-insensitively) then id."""
        ...

    async def get(self, book_id: UUID) -> Book | None: ...

    async def page_after(self, position: tuple[str, str] | None, limit: int) -> list[Book]:
        """Up to ``limit`` books following ``position`` (title, id), by title then id."""
        ...

    async def count(self) -> int: ...

    async def add_missing(self, books: Sequence[Book]) -> int:
        """Insert the books whose id is not stored yet; return how many were new."""
        ...
