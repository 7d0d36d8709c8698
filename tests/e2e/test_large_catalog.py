"""The seed's ``books`` on a real catalog (#39): 10,000 imported books, default settings.

The specification's ``Query.books`` returns the whole catalog. A stack of its own (the
catalog here is ten thousand books larger than every other test expects), started with
the defaults ``make run`` has, its catalog filled as an operator fills it
(``python -m books_graphql import``). Through the gateway: ``{ books { title author } }``
returns every book, while a document that repeats ``books`` under another name, directly or
in fragments, is refused before it runs (docs/api.md#bounded-work).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from api_testkit.catalog import book_ids, generated_books, import_books
from api_testkit.stack import Stack, start_stack

pytestmark = pytest.mark.processes  # its own stack, and the books database's URL

IMPORTED = 10_000
GRAPHQL_RESPONSE = "application/graphql-response+json"


@pytest.fixture(scope="module")
async def large_stack(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with start_stack(tmp_path_factory.mktemp("large-catalog")) as stack:
        yield stack


@pytest.fixture(scope="module")
async def seeded(large_stack: Stack) -> list[str]:
    """The ids of the seeded catalog, before the import."""
    async with httpx.AsyncClient(base_url=large_stack.gateway_url, timeout=30.0) as client:
        return await book_ids(client)


@pytest.fixture(scope="module")
async def imported(
    large_stack: Stack, seeded: list[str], tmp_path_factory: pytest.TempPathFactory
) -> list[dict[str, str]]:
    books = generated_books(IMPORTED)
    report = await import_books(
        books, tmp_path_factory.mktemp("import"), large_stack.services["books"].env
    )
    assert f"{IMPORTED} added" in report, report
    return books


@pytest.fixture
async def gateway(large_stack: Stack) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=large_stack.gateway_url, timeout=30.0) as client:
        yield client


async def post_graphql(
    gateway: httpx.AsyncClient, query: str, media_type: str | None = None
) -> httpx.Response:
    headers = {"accept": media_type} if media_type else {}
    return await gateway.post("/graphql", json={"query": query}, headers=headers)


async def test_books_returns_every_imported_book_through_the_gateway(
    gateway: httpx.AsyncClient, seeded: list[str], imported: list[dict[str, str]]
) -> None:
    response = await post_graphql(gateway, "{ books { title author } }")

    assert response.status_code == 200
    body = response.json()
    assert "errors" not in body, str(body)[:500]
    books = body["data"]["books"]
    assert len(seeded) > 0
    assert len(books) == len(seeded) + IMPORTED
    answered = {(book["title"], book["author"]) for book in books}
    assert {(book["title"], book["author"]) for book in imported} <= answered
    # Asked again (the response cache replays it): the same answer.
    assert (await post_graphql(gateway, "{ books { title author } }")).json() == body


REPEATED_BOOKS = {
    "two aliases": "{ a: books { title } b: books { title } }",
    "a name and an alias": "{ books { title author } again: books { title author } }",
    "aliases in fragments": (
        "{ ...A ...B } fragment A on Query { a: books { id } } "
        "fragment B on Query { b: books { id } }"
    ),
    "an inline fragment": "{ books { id } ... on Query { more: books { id } } }",
    "eleven lists": "{ " + " ".join(f"a{i}: books {{ id }}" for i in range(11)) + " }",
}


@pytest.mark.parametrize("media_type", [None, GRAPHQL_RESPONSE], ids=["json", "graphql-response"])
@pytest.mark.parametrize("query", REPEATED_BOOKS.values(), ids=REPEATED_BOOKS.keys())
async def test_a_document_repeating_books_is_refused_before_it_runs(
    gateway: httpx.AsyncClient, imported: list[dict[str, str]], query: str, media_type: str | None
) -> None:
    response = await post_graphql(gateway, query, media_type)

    assert response.status_code == (400 if media_type == GRAPHQL_RESPONSE else 200)
    body = response.json()
    assert "data" not in body, str(body)[:500]
    assert [error["extensions"]["code"] for error in body["errors"]] == [
        "QUERY_TOO_MANY_LIST_FIELDS"
    ]


async def test_books_repeated_under_one_name_is_one_list(
    gateway: httpx.AsyncClient, seeded: list[str], imported: list[dict[str, str]]
) -> None:
    query = "{ books { title } ...F } fragment F on Query { books { author } }"

    body = (await post_graphql(gateway, query)).json()

    assert "errors" not in body, str(body)[:500]
    assert list(body["data"]) == ["books"]
    assert len(body["data"]["books"]) == len(seeded) + IMPORTED


async def test_books_beside_a_page_counts_against_the_row_budget(
    gateway: httpx.AsyncClient, imported: list[dict[str, str]]
) -> None:
    # booksConnection is executed field by field, where every list is charged (1000 books).
    body = (
        await post_graphql(gateway, "{ books { title } booksConnection { totalCount } }")
    ).json()

    assert body["data"] is None
    assert [error["extensions"]["code"] for error in body["errors"]] == ["QUERY_TOO_MANY_ROWS"]
    # Paged, the same catalog is all there.
    page = (
        await post_graphql(
            gateway, "{ booksConnection(first: 100) { totalCount edges { cursor } } }"
        )
    ).json()
    assert page["data"]["booksConnection"]["totalCount"] >= IMPORTED
    assert len(page["data"]["booksConnection"]["edges"]) == 100
