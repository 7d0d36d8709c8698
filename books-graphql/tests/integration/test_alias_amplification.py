"""Alias amplification (#12, #39): one request reads each root field once and produces a
bounded number of rows.

The attack: aliases of ``books`` under random names (which also defeat the response cache,
keyed by the query text), or of a page of ``booksConnection``. The catalog store here is the
real one (the suite's database, seeded), wrapped to count the queries that reach it; the
server is a real HTTP server in this process. The documented bound: the whole catalog under
one name per operation, at most ``BOOKS_MAX_QUERY_LIST_FIELDS`` lists of books per document,
at most ``BOOKS_MAX_RESULT_ROWS`` books from the lists beyond the whole catalog's.
"""

from __future__ import annotations

import random
import string
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import httpx
import pytest

from api_testkit.in_process import serve_in_process
from books_graphql.app import create_app
from books_graphql.catalog import Book
from books_graphql.context import wire
from books_graphql.repository import BookRepository
from books_graphql.settings import Settings

MAX_LIST_FIELDS = 10


class CountedStore(BookRepository):
    """The real repository, counting the queries it sends to the database."""

    def __init__(self) -> None:
        self.queries = 0

    async def list_all(self) -> list[Book]:
        self.queries += 1
        return await super().list_all()

    async def get(self, book_id: UUID) -> Book | None:
        self.queries += 1
        return await super().get(book_id)

    async def page_after(self, position: tuple[str, str] | None, limit: int) -> list[Book]:
        self.queries += 1
        return await super().page_after(position, limit)

    async def count(self) -> int:
        self.queries += 1
        return await super().count()


def random_aliases(count: int, selection: str, rng: random.Random) -> str:
    names = {"".join(rng.choices(string.ascii_letters, k=12)) for _ in range(count * 2)}
    chosen = sorted(names)[:count]
    return "{ " + " ".join(f"{name}: {selection}" for name in chosen) + " }"


@pytest.fixture(scope="module")
async def catalog_size(base_url: str) -> int:
    async with httpx.AsyncClient(base_url=base_url) as client:
        body = (await client.post("/graphql", json={"query": "{ books { id } }"})).json()
    return len(body["data"]["books"])


@pytest.fixture(scope="module")
def store() -> CountedStore:
    return CountedStore()


@pytest.fixture(scope="module")
async def guarded(base_url: str, store: CountedStore, catalog_size: int) -> AsyncIterator[str]:
    """The service with its default response cache, and room for 3 catalogs of rows.

    ``base_url`` (the session's server) owns the ORM connection this store reads through.
    """
    settings = Settings(
        seed_file=None,
        max_query_fields=5_000,  # the field limit alone would admit the attack
        max_query_list_fields=MAX_LIST_FIELDS,
        max_result_rows=3 * catalog_size,
    )
    async with serve_in_process(
        create_app(settings, context=wire(settings, repository=store))
    ) as url:
        yield url


async def post(url: str, query: str) -> tuple[httpx.Response, dict[str, Any]]:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        response = await client.post("/graphql", json={"query": query})
    return response, response.json()


def codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body.get("errors", [])]


async def test_250_aliases_of_books_are_refused_before_any_read(
    guarded: str, store: CountedStore
) -> None:
    rng = random.Random(12)  # noqa: S311 - alias names, not secrets: the same every run
    for _ in range(3):  # new random names each time: no cache can answer
        before = store.queries
        response, body = await post(guarded, random_aliases(250, "books { id title }", rng))

        assert response.status_code == 200
        assert "data" not in body
        assert codes(body) == ["QUERY_TOO_MANY_LIST_FIELDS"]
        assert str(MAX_LIST_FIELDS) in body["errors"][0]["message"]
        assert store.queries == before


async def test_a_second_name_for_the_whole_catalog_is_refused_before_any_read(
    guarded: str, store: CountedStore
) -> None:
    rng = random.Random(3)  # noqa: S311 - alias names, not secrets
    spread = (
        "{ books { id } ...F } fragment F on Query { ...G } "
        "fragment G on Query { everything: books { title } }"
    )
    for query in (random_aliases(2, "books { id title }", rng), spread):
        before = store.queries
        response, body = await post(guarded, query)

        assert response.status_code == 200
        assert "data" not in body
        assert codes(body) == ["QUERY_TOO_MANY_LIST_FIELDS"]
        assert "whole catalog (books)" in body["errors"][0]["message"]
        assert store.queries == before


async def test_the_whole_catalog_repeated_under_one_name_is_read_and_answered_once(
    guarded: str, store: CountedStore, catalog_size: int
) -> None:
    before = store.queries
    query = "{ books { id } ...F } fragment F on Query { books { title } }"

    response, body = await post(guarded, query)

    assert response.status_code == 200
    assert "errors" not in body
    assert list(body["data"]) == ["books"]
    assert len(body["data"]["books"]) == catalog_size
    assert set(body["data"]["books"][0]) == {"id", "title"}
    assert store.queries == before + 1


async def test_aliases_within_the_list_limit_read_the_store_once(
    guarded: str, store: CountedStore
) -> None:
    before = store.queries
    rng = random.Random(1)  # noqa: S311 - alias names, not secrets
    page = "booksConnection(first: 2) { edges { node { id title } } }"
    response, body = await post(guarded, random_aliases(3, page, rng))

    assert response.status_code == 200
    assert "errors" not in body
    assert [len(page["edges"]) for page in body["data"].values()] == [2] * 3
    assert store.queries == before + 1


async def test_aliases_past_the_row_budget_fail_after_one_read_and_return_no_rows(
    guarded: str, store: CountedStore, catalog_size: int
) -> None:
    before = store.queries
    rng = random.Random(2)  # noqa: S311 - alias names, not secrets
    # Each page holds the whole (seeded) catalog: ten of them pass the budget of three.
    page = "booksConnection(first: 100) { edges { node { id } } }"
    query = random_aliases(MAX_LIST_FIELDS, page, rng)

    response, body = await post(guarded, query)

    assert response.status_code == 200
    assert codes(body) == ["QUERY_TOO_MANY_ROWS"]
    assert str(3 * catalog_size) in body["errors"][0]["message"]
    assert body["data"] is None
    assert store.queries == before + 1


async def test_the_same_page_and_the_same_book_aliased_are_read_once(
    guarded: str, store: CountedStore
) -> None:
    _, everything = await post(guarded, "{ books { id } }")
    book_id = everything["data"]["books"][0]["id"]
    pages = " ".join(f"p{i}: booksConnection(first: 2) {{ totalCount }}" for i in range(4))
    books = " ".join(f'b{i}: book(id: "{book_id}") {{ id }}' for i in range(50))
    before = store.queries

    _, body = await post(guarded, f"{{ {pages} {books} }}")

    assert "errors" not in body, body
    assert body["data"]["b49"] == {"id": book_id}
    # One page query, one count, one read of the book: not 4 + 4 + 50.
    assert store.queries == before + 3
