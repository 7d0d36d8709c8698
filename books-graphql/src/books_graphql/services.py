"""The catalog's rules, independent of HTTP and GraphQL: reading books, importing and seeding them.

Every reader (the resolvers, the in-memory snapshot) and every writer (the import command,
start-up seeding) goes through ``BookService``; only the repository behind it touches the
ORM, through the ``ports.BookStore`` interface. Books are ``catalog.Book`` here and everywhere
above the repository.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

from books_graphql.book_files import read_books
from books_graphql.catalog import Book
from books_graphql.paging import BookPage, book_page
from books_graphql.ports import BookStore

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 500


@dataclass(frozen=True, slots=True)
class ImportReport:
    read: int
    added: int

    @property
    def already_present(self) -> int:
        return self.read - self.added


class BookService:
    """The catalog: every book, one book, a page of books; and adding books."""

    def __init__(self, store: BookStore) -> None:
        self.store = store

    async def all_books(self) -> list[Book]:
        """Every book, by title (case-insensitively) then id."""
        return await self.store.list_all()

    async def book(self, book_id: UUID) -> Book | None:
        return await self.store.get(book_id)

    async def page(self, position: tuple[str, str] | None, size: int) -> BookPage:
        """The ``size`` books after ``position`` (title, id), by title then id."""
        # One more than the page tells whether another page follows.
        return book_page(await self.store.page_after(position, size + 1), size)

    async def count(self) -> int:
        return await self.store.count()

    async def import_books(
        self,
        books: Iterable[Book],
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        on_batch: Callable[[int], None] | None = None,
    ) -> ImportReport:
        """Add the books that are not in the catalog yet, batch by batch.

        ``on_batch`` is told how many records each batch held (for a progress bar). Books
        already present (same id) are left as they are, so an import can be re-run after an
        interruption.
        """
        read = added = 0
        iterator = iter(books)
        while batch := list(itertools.islice(iterator, batch_size)):
            added += await self.store.add_missing(batch)
            read += len(batch)
            if on_batch is not None:
                on_batch(len(batch))
        return ImportReport(read=read, added=added)

    async def seed(self, seed_file: Path) -> ImportReport:
        """Insert the seed file's books that are absent: a no-op after the first start-up."""
        report = await self.import_books(read_books(seed_file))
        logger.info(
            "catalog seeded",
            extra={"seedFile": seed_file.name, "books": report.read, "added": report.added},
        )
        return report


@dataclass(frozen=True, slots=True)
class CatalogSeeding:
    """Start-up seeding as a context resource: run once the database is open, before serving."""

    books: BookService
    seed_file: Path

    async def start(self) -> None:
        await self.books.seed(self.seed_file)

    async def stop(self) -> None:
        """Nothing to stop: seeding is over before the server serves."""
