"""``booksConnection``: keyset pages through a real server process on a real database.

Runs on the suite's database (SQLite, or PostgreSQL with TEST_DATABASE_URL): 10,000 books
paged 100 at a time come back each exactly once, in (title, id) code-point order, even
with books added while paging; bad arguments are GraphQL errors with stable codes.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from typing import Any

import httpx
import orjson
import pytest

from books_graphql.catalog import Book

from ..conftest import OpenCatalog, ServeCatalog

CATALOG_SIZE = 10_000
PAGE = """
query Page($first: Int, $after: String) {
  booksConnection(first: $first, after: $after) {
    totalCount
    edges { cursor node { id title author } }
    pageInfo { hasNextPage endCursor hasPreviousPage startCursor }
  }
}
"""


def catalog(count: int, seed: int) -> list[Book]:
    """Books with clashing titles (the id breaks ties), mixed case and non-ASCII letters."""
    rng = random.Random(seed)  # noqa: S311 - test data, the same every run
    words = ["alpha", "Beta", "gamma", "Émile", "zeta", "Ωmega", "delta", "ärger", "Zoo"]
    return [
        Book(
            id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            title=f"{rng.choice(words)} {rng.randrange(2_000)}",
            author=f"Author {rng.randrange(50)}",
        )
        for _ in range(count)
    ]


def position(book: dict[str, str]) -> tuple[bytes, str]:
    """Code-point order of titles (UTF-8 bytes sort the same way), then the id."""
    return book["title"].encode(), book["id"]


async def page(client: httpx.AsyncClient, **variables: Any) -> dict[str, Any]:
    response = await client.post("/graphql", json={"query": PAGE, "variables": variables})
    assert response.status_code == 200, response.text[:500]
    body = response.json()
    assert "errors" not in body, body
    connection: dict[str, Any] = body["data"]["booksConnection"]
    return connection


@pytest.fixture
async def big_catalog(
    fresh_database: str, open_catalog: OpenCatalog, serve_catalog: ServeCatalog
) -> Any:
    books = catalog(CATALOG_SIZE, seed=16)
    async with open_catalog(fresh_database) as repository:
        assert await repository.add_missing(books) == CATALOG_SIZE
    # Without the response cache: these tests read pages again after changing the catalog.
    async with serve_catalog(fresh_database, BOOKS_RESPONSE_CACHE_TTL_S="0") as url:
        yield url, books


async def test_paging_through_10000_books_returns_each_exactly_once_in_order(
    big_catalog: tuple[str, list[Book]], fresh_database: str, open_catalog: OpenCatalog
) -> None:
    url, books = big_catalog
    added_while_paging = catalog(300, seed=17)
    seen: list[dict[str, str]] = []
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        after = None
        pages = 0
        while True:
            connection = await page(client, first=100, after=after)
            edges = connection["edges"]
            seen.extend(edge["node"] for edge in edges)
            pages += 1
            if pages == 1:
                assert connection["totalCount"] == CATALOG_SIZE
            if pages == 30:
                # Books added mid-way, before and after the current position: the cursor is a
                # position, so nothing already read comes back and nothing unread is skipped.
                async with open_catalog(fresh_database) as repository:
                    await repository.add_missing(added_while_paging)
            assert len(edges) <= 100
            info = connection["pageInfo"]
            assert info["endCursor"] == (edges[-1]["cursor"] if edges else None)
            assert info["hasPreviousPage"] is False
            if not info["hasNextPage"]:
                break
            assert len(edges) == 100
            after = info["endCursor"]

    ids = [book["id"] for book in seen]
    assert len(ids) == len(set(ids)), "a book came back twice"
    assert {book.id for book in books} <= set(ids), "a book was skipped"
    assert set(ids) <= {book.id for book in books + added_while_paging}
    assert seen == sorted(seen, key=position)
    # Added books that sort after the position where they were added were all read.
    at_insert = position(seen[30 * 100 - 1])
    later = {book.id for book in added_while_paging if (book.title.encode(), book.id) > at_insert}
    assert later <= set(ids)


async def test_a_cursor_stays_valid_when_books_are_added_before_it(
    big_catalog: tuple[str, list[Book]], fresh_database: str, open_catalog: OpenCatalog
) -> None:
    url, _ = big_catalog
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        first = await page(client, first=5)
        second = await page(client, first=5, after=first["pageInfo"]["endCursor"])
        async with open_catalog(fresh_database) as repository:
            await repository.add_missing(
                [Book(id=str(uuid.uuid4()), title=" first of all", author="A")]
            )
        again = await page(client, first=5, after=first["pageInfo"]["endCursor"])
        from_start = await page(client, first=1)

    assert again["edges"] == second["edges"]
    assert again["totalCount"] == second["totalCount"] + 1
    assert from_start["edges"][0]["node"]["title"] == " first of all"


@pytest.mark.parametrize(
    ("variables", "says"),
    [
        ({"first": 101}, "between 0 and 100"),
        ({"first": -1}, "between 0 and 100"),
        ({"first": 10, "after": "not a cursor"}, "not a cursor"),
        ({"first": 10, "after": "WyJhIiwiYiJd"}, "not a cursor"),  # ["a","b"]: not an id
        ({"first": 10, "after": "A" * 20_000}, "not a cursor"),
    ],
)
async def test_bad_arguments_are_graphql_errors_with_a_stable_code(
    client: httpx.AsyncClient, variables: dict[str, Any], says: str
) -> None:
    response = await client.post("/graphql", json={"query": PAGE, "variables": variables})

    assert response.status_code == 200
    body = response.json()
    assert body["data"] is None
    [error] = body["errors"]
    assert error["extensions"] == {"code": "BAD_USER_INPUT"}
    assert error["path"] == ["booksConnection"]
    assert says in error["message"]


async def test_defaults_and_an_empty_page(client: httpx.AsyncClient) -> None:
    everything = (await client.post("/graphql", json={"query": "{ books { id } }"})).json()
    total = len(everything["data"]["books"])

    default = await page(client)
    empty = await page(client, first=0)

    assert len(default["edges"]) == min(total, 20)
    assert default["totalCount"] == total
    assert empty["edges"] == []
    assert empty["pageInfo"] == {
        "hasNextPage": total > 0,
        "endCursor": None,
        "hasPreviousPage": False,
        "startCursor": None,
    }


async def test_by_default_books_is_the_whole_catalog_and_other_lists_share_the_budget(
    fresh_database: str, open_catalog: OpenCatalog, serve_catalog: ServeCatalog
) -> None:
    """With the default settings (BOOKS_MAX_RESULT_ROWS 1000, ten of the largest pages),
    ``books`` over a catalog larger than the budget returns every book, by POST and by GET
    (replayed by the response cache, and as a persisted query); ten full pages fit; a second
    name for ``books`` is refused, and ``books`` beside a field the plans do not cover
    (executed field by field) counts against the budget like any list."""
    size = 2_500
    async with open_catalog(fresh_database) as repository:
        assert await repository.add_missing(catalog(size, seed=18)) == size
    full_page = "booksConnection(first: 100) { edges { node { id } } }"
    ten_pages = "{ " + " ".join(f"p{i}: {full_page}" for i in range(10)) + " }"
    everything = "{ books { id title author } }"
    digest = hashlib.sha256(everything.encode()).hexdigest()
    persisted = {"persistedQuery": {"version": 1, "sha256Hash": digest}}

    async with (
        serve_catalog(fresh_database) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as client,
    ):
        posted = (await client.post("/graphql", json={"query": everything})).json()
        replayed = (await client.post("/graphql", json={"query": everything})).json()
        got = await client.get(
            "/graphql",
            params={"query": everything, "extensions": orjson.dumps(persisted).decode()},
            headers={"apollo-require-preflight": "true"},
        )
        by_hash = await client.get(
            "/graphql",
            params={"extensions": orjson.dumps(persisted).decode()},
            headers={"apollo-require-preflight": "true"},
        )
        pages = (await client.post("/graphql", json={"query": ten_pages})).json()
        twice = (
            await client.post("/graphql", json={"query": "{ a: books { id } b: books { id } }"})
        ).json()
        beside_a_page = (
            await client.post(
                "/graphql", json={"query": "{ books { id } booksConnection { totalCount } }"}
            )
        ).json()

    assert "errors" not in posted
    assert len(posted["data"]["books"]) == size
    assert {book["id"] for book in posted["data"]["books"]} == {
        book.id for book in catalog(size, seed=18)
    }
    assert replayed == posted
    assert got.status_code == by_hash.status_code == 200
    assert got.json() == by_hash.json() == posted
    assert "errors" not in pages
    assert [len(page["edges"]) for page in pages["data"].values()] == [100] * 10
    [refusal] = twice["errors"]
    assert refusal["extensions"] == {"code": "QUERY_TOO_MANY_LIST_FIELDS"}
    assert "data" not in twice
    [error] = beside_a_page["errors"]
    assert error["extensions"] == {"code": "QUERY_TOO_MANY_ROWS"}
    assert "more than 1000 books" in error["message"]
    assert beside_a_page["data"] is None
