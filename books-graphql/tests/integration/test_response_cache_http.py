"""Successful query answers are replayed for a short while; nothing else is."""

from __future__ import annotations

from collections.abc import AsyncIterator
from uuid import UUID

import httpx
import pytest

from api_testkit.in_process import serve_in_process
from books_graphql.app import create_app
from books_graphql.catalog import Book
from books_graphql.context import wire
from books_graphql.repository import BookRepository
from books_graphql.settings import Settings

AWAKENING = Book(
    id="3dc6d567-b05b-5923-880a-6f895eef849d", title="The Awakening", author="Kate Chopin"
)
BOOK_QUERY = "query($id: ID!) { book(id: $id) { title } }"


class CountingBooks(BookRepository):
    def __init__(self) -> None:
        self.reads = 0

    async def list_all(self) -> list[Book]:
        self.reads += 1
        return [AWAKENING]

    async def get(self, book_id: UUID) -> Book | None:
        self.reads += 1
        return AWAKENING if str(book_id) == AWAKENING.id else None


async def serve(ttl_s: float, books: CountingBooks) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(seed_file=None, response_cache_ttl_s=ttl_s)
    async with (
        serve_in_process(create_app(settings, context=wire(settings, repository=books))) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        yield client


@pytest.fixture
def books() -> CountingBooks:
    return CountingBooks()


@pytest.fixture
async def cached(books: CountingBooks) -> AsyncIterator[httpx.AsyncClient]:
    async for client in serve(60, books):
        yield client


@pytest.fixture
async def uncached(books: CountingBooks) -> AsyncIterator[httpx.AsyncClient]:
    async for client in serve(0, books):
        yield client


async def test_the_same_query_is_answered_once_then_replayed(
    cached: httpx.AsyncClient, books: CountingBooks
) -> None:
    answers = [
        await cached.post("/", json={"query": "{ books { title } }"}, headers=headers)
        for headers in ({}, {"accept": "application/graphql-response+json"}, {})
    ]

    assert books.reads == 1
    assert {a.text for a in answers} == {'{"data":{"books":[{"title":"The Awakening"}]}}'}
    assert [a.headers["content-type"] for a in answers] == [
        "application/json",
        "application/graphql-response+json",
        "application/json",
    ]


async def test_other_variables_are_another_answer(
    cached: httpx.AsyncClient, books: CountingBooks
) -> None:
    found = await cached.post("/", json={"query": BOOK_QUERY, "variables": {"id": AWAKENING.id}})
    missing = await cached.post(
        "/", json={"query": BOOK_QUERY, "variables": {"id": "00000000-0000-4000-8000-000000000000"}}
    )

    assert found.json() == {"data": {"book": {"title": "The Awakening"}}}
    assert missing.json() == {"data": {"book": None}}
    assert books.reads == 2


async def test_request_errors_are_never_replayed(
    cached: httpx.AsyncClient, books: CountingBooks
) -> None:
    for _ in range(2):
        response = await cached.post("/", json={"query": BOOK_QUERY, "variables": {}})
        assert response.json()["errors"]

    assert books.reads == 0


async def test_with_the_cache_off_every_request_executes(
    uncached: httpx.AsyncClient, books: CountingBooks
) -> None:
    for _ in range(3):
        await uncached.post("/", json={"query": "{ books { title } }"})

    assert books.reads == 3
