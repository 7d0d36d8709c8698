"""The GraphQL executor with an in-memory catalog: schema, resolvers, limits, cache, errors."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

import pytest

from books_graphql.catalog import Book
from books_graphql.executor import GraphQLExecutor, GraphQLResult
from books_graphql.limits.bounds import QueryLimits
from books_graphql.repository import BookRepository
from books_graphql.resolvers import catalog_resolvers
from books_graphql.services import BookService

AWAKENING = Book(
    id="3dc6d567-b05b-5923-880a-6f895eef849d", title="The Awakening", author="Kate Chopin"
)
CITY = Book(id="273ccf2c-fd5d-58e9-b404-f0f62c40b58d", title="City of Glass", author="Paul Auster")
LIMITS = QueryLimits(max_bytes=16_384, max_depth=15, max_fields=500)


class MemoryBooks(BookRepository):
    def __init__(self, *books: Book) -> None:
        self.books = list(books)
        self.reads = 0

    async def list_all(self) -> list[Book]:
        self.reads += 1
        return sorted(self.books, key=lambda b: b.title)

    async def get(self, book_id: UUID) -> Book | None:
        self.reads += 1
        return next((b for b in self.books if b.id == str(book_id)), None)


class FailingBooks(BookRepository):
    async def list_all(self) -> list[Book]:
        # A bug, not an outage (an outage is 503: test_bounded_work_and_errors).
        raise KeyError("catalog_rw@10.0.0.7:5432")


Run = Callable[..., Awaitable[GraphQLResult]]


async def build(repository: BookRepository, limits: QueryLimits = LIMITS) -> GraphQLExecutor:
    return await GraphQLExecutor.build(
        catalog_resolvers(BookService(repository), max_rows=10_000), limits=limits, cache_size=8
    )


def runner(executor: GraphQLExecutor) -> Run:
    async def run(query: str, **kwargs: Any) -> GraphQLResult:
        return await executor.execute(executor.prepare(query), query, **kwargs)

    return run


async def test_books_lists_the_catalog() -> None:
    run = runner(await build(MemoryBooks(AWAKENING, CITY)))

    result = await run("{ books { id title author } }")

    assert result == GraphQLResult(
        body={
            "data": {
                "books": [
                    {"id": CITY.id, "title": "City of Glass", "author": "Paul Auster"},
                    {"id": AWAKENING.id, "title": "The Awakening", "author": "Kate Chopin"},
                ]
            }
        },
        is_request_error=False,
    )


@pytest.mark.parametrize(
    ("book_id", "expected"),
    [
        (AWAKENING.id, {"title": "The Awakening"}),
        (AWAKENING.id.upper(), {"title": "The Awakening"}),
        ("00000000-0000-4000-8000-000000000000", None),
        ("not-a-uuid", None),
    ],
)
async def test_book_finds_one_book_or_null(book_id: str, expected: object) -> None:
    run = runner(await build(MemoryBooks(AWAKENING, CITY)))

    result = await run("query($id: ID!) { book(id: $id) { title } }", variables={"id": book_id})

    assert result.body == {"data": {"book": expected}}


async def test_engines_for_several_apps_coexist_in_one_process() -> None:
    first = runner(await build(MemoryBooks(AWAKENING)))
    second = runner(await build(MemoryBooks(CITY)))

    titles = [
        (await run("{ books { title } }")).body["data"]["books"][0]["title"]
        for run in (first, second)
    ]

    assert titles == ["The Awakening", "City of Glass"]


async def test_a_document_is_parsed_once_then_served_from_the_cache() -> None:
    executor = await build(MemoryBooks(AWAKENING))
    run = runner(executor)

    for _ in range(5):
        await run("{ books { title } }")

    info = executor.prepare.cache_info()  # type: ignore[attr-defined]  # an lru_cache, typed as Callable
    assert info.misses == 1
    assert info.hits == 9  # the route's prepare and the engine's lookup, per request


async def test_a_refused_document_is_never_parsed_nor_executed() -> None:
    books = MemoryBooks(AWAKENING)
    executor = await build(books, QueryLimits(max_bytes=10_000, max_depth=15, max_fields=3))
    parsed: list[str] = []
    parse = executor._parse_and_validate
    assert parse is not None

    def recording_parse(query: str, schema: Any) -> tuple[Any, Any]:
        parsed.append(query)
        return parse(query, schema)

    executor._parse_and_validate = recording_parse

    result = await runner(executor)("{ a: books { title } b: books { title } }")

    assert result.is_request_error
    assert result.body["errors"][0]["extensions"] == {"code": "QUERY_TOO_MANY_FIELDS"}
    assert "data" not in result.body
    assert parsed == []
    assert books.reads == 0


async def test_a_document_with_a_nul_is_refused_not_cut_short_at_it() -> None:
    # The parser reads a C string: "{ books { title } }\0 anything" used to run the prefix.
    books = MemoryBooks(AWAKENING)
    run = runner(await build(books))

    result = await run("{ books { title } }\x00 }}} not graphql")

    assert result.is_request_error
    assert result.body["errors"][0]["extensions"] == {"code": "GRAPHQL_PARSE_FAILED"}
    assert "NUL" in result.body["errors"][0]["message"]
    assert books.reads == 0


@pytest.mark.parametrize(
    ("query", "code"),
    [("{ books { title", "GRAPHQL_PARSE_FAILED"), ("{ authors }", "GRAPHQL_VALIDATION_FAILED")],
)
async def test_parse_and_validation_errors_are_request_errors_with_a_code(
    query: str, code: str
) -> None:
    books = MemoryBooks(AWAKENING)

    result = await runner(await build(books))(query)

    assert result.is_request_error
    assert "data" not in result.body
    [error] = result.body["errors"]
    assert error["extensions"]["code"] == code
    assert "path" not in error
    assert books.reads == 0


async def test_variables_that_do_not_coerce_are_a_request_error_with_the_reason() -> None:
    result = await runner(await build(MemoryBooks(AWAKENING)))(
        "query($id: ID!) { book(id: $id) { title } }", variables={"id": {"nested": True}}
    )

    assert result.is_request_error
    assert "data" not in result.body
    assert "ID cannot represent value" in result.body["errors"][0]["message"]


async def test_the_operation_to_run_is_chosen_by_name() -> None:
    run = runner(await build(MemoryBooks(AWAKENING)))
    query = "query Titles { books { title } } query Authors { books { author } }"

    chosen = await run(query, operation_name="Authors")
    unnamed = await run(query)

    assert chosen.body == {"data": {"books": [{"author": "Kate Chopin"}]}}
    assert unnamed.is_request_error


async def test_prepared_documents_know_their_operation_types() -> None:
    executor = await build(MemoryBooks())

    prepared = executor.prepare("query A { books { id } } mutation B { x }")
    broken = executor.prepare("mutation { x")

    assert prepared.operation_type("A") == "query"
    assert prepared.operation_type("B") == "mutation"
    assert prepared.operation_type(None) is None  # two operations: none is implied
    assert prepared.operation_type("C") is None
    assert broken.operation_type(None) is None  # unparsable: nothing to know


async def test_unexpected_resolver_errors_are_masked_and_logged_with_the_request_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="books_graphql.executor")

    result = await runner(await build(FailingBooks()))("{ books { title } }", request_id="req-42")

    assert not result.is_request_error
    assert result.body == {
        "data": None,
        "errors": [
            {
                "message": "Internal server error",
                "path": ["books"],
                "locations": [{"line": 1, "column": 3}],
                "extensions": {"code": "INTERNAL_SERVER_ERROR"},
            }
        ],
    }
    [record] = caplog.records
    assert record.requestId == "req-42"  # type: ignore[attr-defined]  # an extra of the log call
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], KeyError)
