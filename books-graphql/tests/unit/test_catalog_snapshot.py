"""The in-memory catalog follows the catalog version, checked at most every interval."""

from __future__ import annotations

import asyncio

from books_graphql.catalog import Book
from books_graphql.http.answer import Answer, Caching
from books_graphql.http.response_cache import ResponseCache
from books_graphql.plans.snapshot import CatalogSnapshots
from books_graphql.repository import BookRepository
from books_graphql.services import BookService

KINDRED = Book(id="0b7f7e4e-5d2a-4f44-9d0e-1c3c1f3b7a10", title="Kindred", author="O. Butler")
BELOVED = Book(id="1c8f7e4e-5d2a-4f44-9d0e-1c3c1f3b7a10", title="Beloved", author="T. Morrison")


class Catalog(BookRepository):
    """Books and their version, as an import would change them."""

    def __init__(self) -> None:
        self.books = [KINDRED]
        self.version = 1
        self.loads = 0
        self.version_reads = 0

    async def list_all(self) -> list[Book]:
        self.loads += 1
        return sorted(self.books, key=lambda book: book.title)

    async def read_version(self) -> int:
        self.version_reads += 1
        await asyncio.sleep(0)  # a real read yields to the loop
        return self.version

    def import_book(self, book: Book) -> None:
        self.books.append(book)
        self.version += 1


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def snapshots(catalog: Catalog, clock: Clock, changes: list[int]) -> CatalogSnapshots:
    return CatalogSnapshots(
        BookService(catalog),
        row=lambda book: (book.id, book.title, book.author, "Book"),
        read_version=catalog.read_version,
        check_interval_s=0.005,
        max_age_s=60,
        on_new_version=changes.append,
        clock=clock,
    )


async def test_the_version_is_read_at_most_once_per_interval() -> None:
    catalog, clock, changes = Catalog(), Clock(), list[int]()
    current = snapshots(catalog, clock, changes)

    first = await current.current()
    again = await current.current()
    clock.now += 0.001
    soon = await current.current()

    assert first is again is soon
    assert (catalog.version_reads, catalog.loads) == (1, 1)
    assert first.rows == ((KINDRED.id, "Kindred", "O. Butler", "Book"),)
    assert first.rows_by_id[KINDRED.id] == first.rows[0]


async def test_a_new_version_reloads_the_books_after_the_interval() -> None:
    catalog, clock, changes = Catalog(), Clock(), list[int]()
    current = snapshots(catalog, clock, changes)
    before = await current.current()

    catalog.import_book(BELOVED)
    clock.now += 0.006
    after = await current.current()

    assert [book.title for book in before.books] == ["Kindred"]
    assert [book.title for book in after.books] == ["Beloved", "Kindred"]
    assert after.version == 2
    assert changes == [2]


async def test_an_unchanged_version_keeps_the_snapshot() -> None:
    catalog, clock, changes = Catalog(), Clock(), list[int]()
    current = snapshots(catalog, clock, changes)
    before = await current.current()

    clock.now += 1
    after = await current.current()

    assert after is before
    assert (catalog.version_reads, catalog.loads) == (2, 1)
    assert changes == []


async def test_a_snapshot_past_its_max_age_is_reloaded_whatever_the_version() -> None:
    catalog, clock, changes = Catalog(), Clock(), list[int]()
    current = snapshots(catalog, clock, changes)
    await current.current()

    catalog.books.append(BELOVED)  # behind the service's back: no new version
    clock.now += 61
    after = await current.current()

    assert len(after.books) == 2
    assert catalog.loads == 2


async def test_concurrent_requests_share_one_check() -> None:
    catalog, clock, changes = Catalog(), Clock(), list[int]()
    current = snapshots(catalog, clock, changes)

    answers = await asyncio.gather(*(current.current() for _ in range(10)))

    assert all(answer is answers[0] for answer in answers)
    assert (catalog.version_reads, catalog.loads) == (1, 1)


def test_a_cached_answer_is_replayed_only_at_its_catalog_version() -> None:
    cache = ResponseCache(ttl_s=60, max_bytes=10_000)
    key = ("{ books { title } }", None, None)

    stored = Answer(b'{"data":{"books":[]}}', 200, Caching.REPLAYABLE)
    cache.put(key, stored, version=1)

    assert cache.get(key, 1) is stored
    assert cache.get(key, 2) is None
    assert len(cache) == 0  # a stale entry leaves when met


async def test_an_answer_computed_from_an_old_version_is_never_replayed_at_the_new_one() -> None:
    cache = ResponseCache(ttl_s=60, max_bytes=10_000)
    key = ("{ books { title } }", None, None)

    async def old_answer() -> Answer:
        return Answer(b'{"old":1}', 200, Caching.REPLAYABLE)

    async def new_answer() -> Answer:
        return Answer(b'{"new":1}', 200, Caching.REPLAYABLE)

    await cache.fetch(key, old_answer, version=1)
    replayed = await cache.fetch(key, new_answer, version=2)

    assert replayed.body == b'{"new":1}'


async def test_a_failed_check_is_not_retried_by_the_requests_of_the_same_interval() -> None:
    catalog, clock, changes = Catalog(), Clock(), list[int]()
    current = snapshots(catalog, clock, changes)
    await current.current()

    async def down() -> int:
        catalog.version_reads += 1
        raise ConnectionRefusedError("db down")

    current.read_version = down
    clock.now += 0.006
    results = await asyncio.gather(*(current.current() for _ in range(5)), return_exceptions=True)
    reads_while_down = catalog.version_reads
    clock.now += 0.006
    current.read_version = catalog.read_version
    recovered = await current.current()

    assert all(isinstance(result, Exception) for result in results)
    assert reads_while_down == 2  # the first check, then one failed attempt: not five
    assert recovered.version == 1
