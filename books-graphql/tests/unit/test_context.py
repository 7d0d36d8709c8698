"""``wire`` builds the service's parts from settings; a store of the caller's replaces the ORM."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from books_graphql.catalog import Book
from books_graphql.context import wire
from books_graphql.http.answer import Answer, Caching
from books_graphql.repository import BookRepository
from books_graphql.services import CatalogSeeding
from books_graphql.settings import DEFAULT_SEED_FILE, Settings

DATABASE_URL = "sqlite://:memory:"


class RecordingBooks(BookRepository):
    """A store that keeps what seeding adds."""

    def __init__(self) -> None:
        self.added: list[Book] = []

    async def add_missing(self, books: Sequence[Book]) -> int:
        self.added.extend(books)
        return len(books)


def test_a_store_of_the_callers_opens_no_database_and_follows_no_catalog_version() -> None:
    store = RecordingBooks()

    context = wire(Settings(seed_file=None), repository=store)

    assert context.books.store is store
    assert context.database is None
    assert context.catalog is None


def test_without_a_store_the_configured_database_is_opened_and_its_version_followed() -> None:
    context = wire(Settings(database_url=DATABASE_URL, seed_file=None))

    assert context.database is not None
    assert context.database["connections"]["default"] == DATABASE_URL
    assert context.catalog is not None
    assert isinstance(context.books.store, BookRepository)


async def test_the_engine_is_cooked_only_when_the_server_starts_it() -> None:
    context = wire(Settings(seed_file=None), repository=RecordingBooks())
    engine = context.graphql

    with pytest.raises(RuntimeError, match="cooked when the server starts"):
        engine.executor  # noqa: B018 - the property's refusal is what is tested
    await engine.start()

    assert context.resources[0] is engine
    assert engine.executor.prepare("{ books { title } }").errors is None


async def test_seeding_is_a_resource_that_adds_the_seed_file_when_started() -> None:
    store = RecordingBooks()
    unseeded = wire(Settings(seed_file=None), repository=store)
    context = wire(Settings(seed_file=DEFAULT_SEED_FILE), repository=store)
    [seeding] = [part for part in context.resources if isinstance(part, CatalogSeeding)]

    await seeding.start()

    assert not any(isinstance(part, CatalogSeeding) for part in unseeded.resources)
    assert "The Awakening" in {book.title for book in store.added}


def test_a_new_catalog_version_forgets_the_answers_kept_for_the_old_one() -> None:
    context = wire(Settings(database_url=DATABASE_URL, seed_file=None, response_cache_ttl_s=60))
    assert context.catalog is not None
    assert context.responses is not None
    answer = Answer(b'{"data":{}}', 200, Caching.REPLAYABLE)
    context.responses.put(("{ books { title } }", None, None), answer, version=1)
    assert context.catalog.on_new_version is not None

    context.catalog.on_new_version(2)

    assert len(context.responses) == 0


def test_a_response_cache_of_zero_seconds_is_none_at_all() -> None:
    context = wire(Settings(seed_file=None, response_cache_ttl_s=0), repository=RecordingBooks())

    assert context.responses is None
