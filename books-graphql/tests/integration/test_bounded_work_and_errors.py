"""Limits refuse documents before execution; resolver failures are masked and logged."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID, uuid4

import httpx
import pytest
from asyncpg.exceptions import CannotConnectNowError

from api_testkit.in_process import serve_in_process
from books_graphql.app import create_app
from books_graphql.catalog import Book
from books_graphql.context import wire
from books_graphql.repository import BookRepository
from books_graphql.settings import Settings

GRAPHQL_RESPONSE = "application/graphql-response+json"


class CountingBooks(BookRepository):
    """An in-memory catalog that counts the reads reaching it."""

    def __init__(self) -> None:
        self.reads = 0
        self.books = [Book(id=str(uuid4()), title="The Awakening", author="Kate Chopin")]

    async def list_all(self) -> list[Book]:
        self.reads += 1
        return list(self.books)


class UnreachableBooks(BookRepository):
    """A catalog whose PostgreSQL is restarting."""

    async def list_all(self) -> list[Book]:
        raise CannotConnectNowError("the database system is shutting down")

    async def get(self, book_id: UUID) -> Book | None:
        raise CannotConnectNowError("the database system is shutting down")


class BrokenBooks(BookRepository):
    async def list_all(self) -> list[Book]:
        raise RuntimeError("connection to db-primary.internal:5432 refused for user catalog")

    async def get(self, book_id: UUID) -> Book | None:
        raise RuntimeError("connection to db-primary.internal:5432 refused for user catalog")


@pytest.fixture(scope="module")
def spy() -> CountingBooks:
    return CountingBooks()


@pytest.fixture(scope="module")
async def limited_url(spy: CountingBooks) -> AsyncIterator[str]:
    limited = Settings(
        seed_file=None, max_query_bytes=1_000_000, max_query_depth=4, max_query_fields=50
    )
    async with serve_in_process(create_app(limited, context=wire(limited, repository=spy))) as url:
        yield url


@pytest.fixture
async def limited(limited_url: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=limited_url, timeout=30) as client:
        yield client


def aliases(count: int, selection: str = "books { title }") -> str:
    return "{ " + " ".join(f"a{i}: {selection}" for i in range(count)) + " }"


FOUR_DEEP = "{ __schema { types { fields { name } } } }"
FIVE_DEEP = "{ __schema { types { fields { type { name } } } } }"


async def graphql_errors(client: httpx.AsyncClient, query: str) -> tuple[int, dict[str, Any]]:
    response = await client.post("/", json={"query": query}, headers={"accept": GRAPHQL_RESPONSE})
    return response.status_code, response.json()


async def test_a_query_within_the_limits_runs(limited: httpx.AsyncClient) -> None:
    # `books` itself may have one name only (#39): the other nine aliases are __typename.
    query = aliases(9, "__typename").replace("{ ", "{ books { title } ", 1)
    status, body = await graphql_errors(limited, query)

    assert status == 200
    assert len(body["data"]) == 10


async def test_thousands_of_aliases_are_refused_cheaply_and_never_executed(
    limited: httpx.AsyncClient, spy: CountingBooks
) -> None:
    reads_before = spy.reads
    query = aliases(20_000)  # ~450 kB, 40 000 fields

    started = time.perf_counter()
    status, body = await graphql_errors(limited, query)
    elapsed = time.perf_counter() - started

    assert status == 400
    assert "data" not in body
    error = body["errors"][0]
    assert error["extensions"]["code"] == "QUERY_TOO_MANY_FIELDS"
    assert spy.reads == reads_before
    # Tartiflette alone needs well over half a second to parse this document.
    assert elapsed < 0.25, f"refusing took {elapsed:.3f}s"


async def test_a_query_above_the_depth_limit_is_refused(
    limited: httpx.AsyncClient, spy: CountingBooks
) -> None:
    within_status, within = await graphql_errors(limited, FOUR_DEEP)
    status, body = await graphql_errors(limited, FIVE_DEEP)

    assert within_status == 200, within
    assert status == 400
    assert body["errors"][0]["extensions"]["code"] == "QUERY_TOO_DEEP"


async def test_fragments_count_where_they_are_spread(limited: httpx.AsyncClient) -> None:
    # 8 spreads of a 7-field fragment: 56 fields, though the text names only 15.
    spreads = " ".join(f"b{i}: books {{ ...F }}" for i in range(8))
    fragment = "fragment F on Book { id title author t2: title a2: author i2: id t3: title }"
    query = f"{{ {spreads} }} {fragment}"

    status, body = await graphql_errors(limited, query)

    assert status == 400
    assert body["errors"][0]["extensions"]["code"] == "QUERY_TOO_MANY_FIELDS"


async def test_a_query_above_the_size_limit_is_refused(client: httpx.AsyncClient) -> None:
    query = "{ books { title } }" + " " * 20_000  # the default limit is 16 KiB

    response = await client.post("/", json={"query": query})

    assert response.status_code == 200  # application/json: errors ride in a 200
    assert response.json()["errors"][0]["extensions"]["code"] == "QUERY_TOO_LARGE"


async def test_the_default_limits_admit_graphiqls_introspection_query(
    client: httpx.AsyncClient, introspection_query: str
) -> None:
    response = await client.post("/", json={"query": introspection_query})

    assert response.status_code == 200
    body = response.json()
    assert "errors" not in body, body.get("errors")
    names = {t["name"] for t in body["data"]["__schema"]["types"]}
    assert {"Book", "Query"} <= names


@pytest.fixture
async def broken() -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(seed_file=None)
    app = create_app(settings, context=wire(settings, repository=BrokenBooks()))
    async with serve_in_process(app) as url, httpx.AsyncClient(base_url=url) as client:
        yield client


async def test_resolver_failures_are_masked_and_logged_with_the_request_id(
    broken: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="books_graphql.executor")

    response = await broken.post(
        "/",
        json={"query": '{ book(id: "3dc6d567-b05b-5923-880a-6f895eef849d") { title } }'},
        headers={"x-request-id": "req-masked-1"},
    )

    assert response.status_code == 200
    body = response.json()
    assert body["data"] == {"book": None}
    assert body["errors"] == [
        {
            "message": "Internal server error",
            "path": ["book"],
            "locations": [{"line": 1, "column": 3}],
            "extensions": {"code": "INTERNAL_SERVER_ERROR"},
        }
    ]
    assert "db-primary" not in response.text
    [record] = [r for r in caplog.records if r.name == "books_graphql.executor"]
    assert record.requestId == "req-masked-1"  # type: ignore[attr-defined]  # an extra of the log call
    assert record.exc_info is not None
    assert "db-primary" in str(record.exc_info[1])


async def test_a_failing_non_null_root_field_nulls_data_but_stays_a_graphql_response(
    broken: httpx.AsyncClient,
) -> None:
    response = await broken.post(
        "/", json={"query": "{ books { title } }"}, headers={"accept": GRAPHQL_RESPONSE}
    )

    # Execution began: per the specification a 200 with data null and the masked error.
    assert response.status_code == 200
    assert response.json()["data"] is None
    assert response.json()["errors"][0]["message"] == "Internal server error"


@pytest.mark.parametrize("accept", [GRAPHQL_RESPONSE, "application/json"])
async def test_a_catalog_whose_database_is_down_answers_503_not_a_200_with_errors(
    accept: str,
) -> None:
    settings = Settings(seed_file=None)
    app = create_app(settings, context=wire(settings, repository=UnreachableBooks()))
    async with serve_in_process(app) as url, httpx.AsyncClient(base_url=url) as client:
        response = await client.post(
            "/", json={"query": "{ books { title } }"}, headers={"accept": accept}
        )

    assert response.status_code == 503
    assert response.headers["retry-after"]
    assert response.json()["error"]["code"] == "UNAVAILABLE"
    assert "shutting down" not in response.text
