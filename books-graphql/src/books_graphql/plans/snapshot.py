"""The catalog in memory, reloaded when its version changes (on any replica's import).

Reading 10,000 books from the database for every request costs more than answering; the
catalog only changes by imports, which bump ``catalog_version`` in their transaction. A
replica therefore keeps one immutable snapshot (the books in ``BookService.all_books``'
order, and each book's field values as a row, computed once) and, before answering, makes
sure the version was read less than ``check_interval_s`` ago: one primary-key read every few
milliseconds at most, shared by the requests that arrive meanwhile. A snapshot older than
``max_age_s`` is reloaded whatever the version says: a safety net for changes made behind
the service's back.

An answer can thus lag an import by at most ``check_interval_s``; once the import has
finished and that interval has passed, every replica answers from the new catalog.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from books_graphql.catalog import Book
from books_graphql.services import BookService

Row = tuple[str, ...]


class CatalogUnavailableError(Exception):
    """The last check of the catalog version, a moment ago, failed."""


@dataclass(frozen=True, slots=True)
class CatalogSnapshot:
    """Every book at one catalog version; rows are in ``CatalogShape.columns`` order."""

    version: int
    books: tuple[Book, ...]
    rows: tuple[Row, ...]
    rows_by_id: Mapping[str, Row]
    loaded_at: float


class CatalogSnapshots:
    """The current snapshot, checked against the catalog's version before use."""

    def __init__(
        self,
        books: BookService,
        *,
        row: Callable[[Book], Row],
        read_version: Callable[[], Awaitable[int]],
        check_interval_s: float,
        max_age_s: float,
        on_new_version: Callable[[int], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.books = books
        self.row = row
        self.read_version = read_version
        self.check_interval_s = check_interval_s
        self.max_age_s = max_age_s
        self.on_new_version = on_new_version
        self.clock = clock
        self._snapshot: CatalogSnapshot | None = None
        self._checked_at = 0.0
        self._failure: tuple[float, Exception] | None = None
        self._lock = asyncio.Lock()

    async def current(self) -> CatalogSnapshot:
        """The snapshot of a version read at most ``check_interval_s`` ago.

        Raises what the database raises (the caller falls back to the resolvers, which
        report an outage as such); a failed check is not retried by the requests of the
        same interval, so an outage never queues requests behind each other's timeouts.
        """
        snapshot = self._snapshot
        if snapshot is not None and self.clock() - self._checked_at < self.check_interval_s:
            return snapshot
        self._raise_recent_failure()
        async with self._lock:  # one check at a time; the requests queued here share it
            snapshot = self._snapshot
            started = self.clock()
            if snapshot is not None and started - self._checked_at < self.check_interval_s:
                return snapshot
            self._raise_recent_failure()
            try:
                snapshot = await self._check(snapshot, started)
            except Exception as error:
                self._failure = (started, error)
                raise
            self._failure = None
            self._checked_at = started
            return snapshot

    async def _check(self, snapshot: CatalogSnapshot | None, started: float) -> CatalogSnapshot:
        version = await self.read_version()
        if (
            snapshot is not None
            and snapshot.version == version
            and started - snapshot.loaded_at < self.max_age_s
        ):
            return snapshot
        # The version is read first: these books are at least that recent.
        fresh = self._build(version, await self.books.all_books(), started)
        changed = snapshot is not None and snapshot.version != version
        self._snapshot = fresh
        if changed and self.on_new_version is not None:
            self.on_new_version(version)
        return fresh

    def _raise_recent_failure(self) -> None:
        if self._failure is not None:
            failed_at, error = self._failure
            if self.clock() - failed_at < self.check_interval_s:
                raise CatalogUnavailableError("the catalog version could not be read") from error

    def _build(self, version: int, books: list[Book], loaded_at: float) -> CatalogSnapshot:
        rows = tuple(self.row(book) for book in books)
        return CatalogSnapshot(
            version=version,
            books=tuple(books),
            rows=rows,
            rows_by_id={book.id: row for book, row in zip(books, rows, strict=True)},
            loaded_at=loaded_at,
        )
