"""The catalog's write rules: importing books (the CLI) and seeding them (start-up)."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from books_graphql.book_files import read_books
from books_graphql.catalog import Book
from books_graphql.repository import BookRepository

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 500


@dataclass(frozen=True, slots=True)
class ImportReport:
    read: int
    added: int

    @property
    def already_present(self) -> int:
        return self.read - self.added


async def import_books(
    repository: BookRepository,
    books: Iterable[Book],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_batch: Callable[[int], None] | None = None,
) -> ImportReport:
    """Add the books that are not in the catalog yet, batch by batch.

    ``on_batch`` is told how many records each batch held (for a progress bar). Books already
    present (same id) are left as they are, so an import can be re-run after an interruption.
    """
    read = added = 0
    iterator = iter(books)
    while batch := list(itertools.islice(iterator, batch_size)):
        added += await repository.add_missing(batch)
        read += len(batch)
        if on_batch is not None:
            on_batch(len(batch))
    return ImportReport(read=read, added=added)


async def seed_catalog(repository: BookRepository, seed_file: Path) -> ImportReport:
    """Insert the seed file's books that are absent: a no-op after the first start-up."""
    report = await import_books(repository, read_books(seed_file))
    logger.info(
        "catalog seeded",
        extra={"seedFile": seed_file.name, "books": report.read, "added": report.added},
    )
    return report
