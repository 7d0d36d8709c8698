"""Compiled plans answer exactly as Tartiflette does: same bytes, or they step aside.

Documents are generated (hypothesis): aliases, repeated keys, fragments and inline
fragments on both types, ``@skip``/``@include`` with literals and variables, ``__typename``,
known, unknown and malformed ids, variables of every scalar type given right, wrong, null
or not at all. Each runs through the fast path and through Tartiflette; whenever the fast
path answers, its response must serialise to the same bytes (data, errors, key order).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from books_graphql.catalog import Book
from books_graphql.executor import GraphQLExecutor
from books_graphql.limits.bounds import QueryLimits
from books_graphql.plans.fast_path import FastPath
from books_graphql.plans.shape import catalog_shape
from books_graphql.plans.snapshot import CatalogSnapshot, CatalogSnapshots
from books_graphql.repository import BookRepository
from books_graphql.resolvers import catalog_resolvers
from books_graphql.services import BookService

BOOKS = (
    Book(id="3dc6d567-b05b-5923-880a-6f895eef849d", title="The Awakening", author="Kate Chopin"),
    Book(id="273ccf2c-fd5d-58e9-b404-f0f62c40b58d", title="City of Glass", author="Paul Auster"),
    Book(id="0b7f7e4e-5d2a-4f44-9d0e-1c3c1f3b7a10", title="Kindred", author="Octavia Butler"),
)
IDS = (
    BOOKS[0].id,
    BOOKS[1].id.upper(),  # the same book, spelled otherwise: answered with its stored id
    "9e3c5d2e-0000-4000-8000-000000000000",  # a UUID no book has
    "not-a-uuid",
    "",
)
BOOK_FIELDS = ("id", "title", "author", "__typename")
FRAGMENTS = {
    "Title": "fragment Title on Book { title }",
    "Everything": "fragment Everything on Book { id title author __typename }",
    "Named": "fragment Named on Book { name: title ...Title }",
    "Listing": "fragment Listing on Query { books { author } __typename }",
}
FRAGMENT_USES = {"Named": ("Title",)}
SCALAR_VALUES: dict[str, list[Any]] = {
    "Boolean": [True, False],
    "ID": list(IDS),
    "String": ["text", ""],
    "Int": [0, -7, 2**31 - 1],
    "Float": [1.5, -0.25],
}
LIMITS = QueryLimits(max_bytes=16_384, max_depth=15, max_fields=500)


class MemoryBooks(BookRepository):
    """The reference resolvers' store: the same books, in ``list_all``'s order."""

    def __init__(self, *books: Book) -> None:
        self.books = sorted(books, key=lambda book: (book.title.casefold(), book.id))

    async def list_all(self) -> list[Book]:
        return list(self.books)

    async def get(self, book_id: UUID) -> Book | None:
        return next((book for book in self.books if book.id == str(book_id)), None)


WRONG_VALUES: list[Any] = [None, 3, 2**40, 2.5, "true", [True], {"a": 1}]


@dataclass
class Engines:
    tartiflette: GraphQLExecutor
    fast: FastPath
    snapshot: CatalogSnapshot


@pytest.fixture(scope="module")
async def engines() -> Engines:
    books = BookService(MemoryBooks(*BOOKS))
    executor = await GraphQLExecutor.build(
        catalog_resolvers(books, max_rows=100_000), limits=LIMITS, cache_size=4096
    )
    shape = catalog_shape(executor._schema)

    async def version() -> int:
        return 1

    snapshots = CatalogSnapshots(
        books, row=shape.row, read_version=version, check_interval_s=60, max_age_s=60
    )
    return Engines(
        executor, FastPath(executor, shape, 4096, max_rows=100_000), await snapshots.current()
    )


@dataclass
class Generated:
    query: str
    variables: dict[str, Any]


class DocumentBuilder:
    """Draws one document and remembers the variables and fragments it uses."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.variables: dict[str, str] = {}  # name → the type it is used as
        self.fragments: set[str] = set()

    def directives(self) -> str:
        choice = self.draw(st.integers(0, 5))
        if choice <= 2:
            return ""
        name = self.draw(st.sampled_from(["skip", "include"]))
        if choice == 3:
            return f" @{name}(if: {self.draw(st.sampled_from(['true', 'false']))})"
        variable = self.draw(st.sampled_from(["c1", "c2"]))
        self.variables[variable] = "Boolean"
        return f" @{name}(if: ${variable})"

    def alias(self, name: str) -> str:
        alias = self.draw(st.sampled_from([None, None, "a", "b", name]))
        return f"{alias}: " if alias else ""

    def book_selection(self, depth: int) -> str:
        items = []
        for _ in range(self.draw(st.integers(1, 4))):
            kind = self.draw(st.sampled_from(["field", "field", "inline", "spread"]))
            if kind == "inline" and depth < 2:
                on = self.draw(st.sampled_from(["", " on Book"]))
                items.append(f"...{on}{self.directives()} {{ {self.book_selection(depth + 1)} }}")
            elif kind == "spread":
                name = self.draw(st.sampled_from(["Title", "Everything", "Named"]))
                self.fragments.update((name, *FRAGMENT_USES.get(name, ())))
                items.append(f"...{name}{self.directives()}")
            else:
                name = self.draw(st.sampled_from(BOOK_FIELDS))
                items.append(f"{self.alias(name)}{name}{self.directives()}")
        return " ".join(items)

    def book_argument(self) -> str:
        if self.draw(st.booleans()):
            return orjson.dumps(self.draw(st.sampled_from(IDS))).decode()
        self.variables["id"] = "ID"
        return "$id"

    def root_selection(self, depth: int = 0) -> str:
        items = []
        for _ in range(self.draw(st.integers(1, 3))):
            kind = self.draw(st.sampled_from(["books", "book", "book", "typename", "fragment"]))
            if kind == "books":
                items.append(f"{self.alias('books')}books{self.directives()} "
                             f"{{ {self.book_selection(0)} }}")  # fmt: skip
            elif kind == "book":
                items.append(f"{self.alias('book')}book(id: {self.book_argument()})"
                             f"{self.directives()} {{ {self.book_selection(0)} }}")  # fmt: skip
            elif kind == "typename":
                items.append(f"{self.alias('__typename')}__typename{self.directives()}")
            elif depth == 0 and self.draw(st.booleans()):
                on = self.draw(st.sampled_from(["", " on Query"]))
                items.append(f"...{on}{self.directives()} {{ {self.root_selection(1)} }}")
            else:
                self.fragments.add("Listing")
                items.append(f"...Listing{self.directives()}")
        return " ".join(items)

    def declaration(self, name: str, used_as: str) -> str:
        """Usually the right type, sometimes a default, sometimes the wrong type."""
        kind = self.draw(st.integers(0, 6))
        if kind == 0:
            return f"${name}: {self.draw(st.sampled_from(sorted(SCALAR_VALUES)))}!"
        if kind == 1:
            default = orjson.dumps(self.draw(st.sampled_from(SCALAR_VALUES[used_as]))).decode()
            return f"${name}: {used_as} = {default}"
        if kind == 2:
            return f"${name}: {used_as}"
        return f"${name}: {used_as}!"

    def value(self, used_as: str) -> Any:
        kind = self.draw(st.integers(0, 5))
        if kind == 0:
            return self.draw(st.sampled_from(WRONG_VALUES))
        return self.draw(st.sampled_from(SCALAR_VALUES[used_as]))


@st.composite
def documents(draw: st.DrawFn) -> Generated:
    builder = DocumentBuilder(draw)
    selection = builder.root_selection()
    declarations = [builder.declaration(n, t) for n, t in sorted(builder.variables.items())]
    if draw(st.integers(0, 4)) == 0:  # a variable of another scalar type, used nowhere
        extra_type = draw(st.sampled_from(sorted(SCALAR_VALUES)))
        declarations.append(f"$extra: {extra_type}{draw(st.sampled_from(['', '!']))}")
        builder.variables["extra"] = extra_type
    variables = {
        name: builder.value(used_as)
        for name, used_as in builder.variables.items()
        if draw(st.integers(0, 6)) > 0  # sometimes not given at all
    }
    header = f"query Generated({', '.join(declarations)})" if declarations else "query Generated"
    fragments = " ".join(FRAGMENTS[name] for name in sorted(builder.fragments))
    return Generated(f"{header} {{ {selection} }} {fragments}".strip(), variables)


async def both(engines: Engines, query: str, variables: dict[str, Any] | None) -> tuple[Any, Any]:
    fast = engines.fast.execute(engines.snapshot, query, variables=variables, operation_name=None)
    prepared = engines.tartiflette.prepare(query)
    reference = await engines.tartiflette.execute(prepared, query, variables=variables)
    return fast, reference.body


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=documents())
async def test_generated_documents_answer_like_tartiflette(
    engines: Engines, generated: Generated
) -> None:
    fast, reference = await both(engines, generated.query, generated.variables)
    if fast is not None:
        assert orjson.dumps(fast) == orjson.dumps(reference), generated.query


PLANNED = [
    ("{ books { title author } }", None),
    (f'{{ a: books {{ t: title t: title author }} b: book(id: "{BOOKS[2].id}") {{ id }} }}', None),
    ("query Q($id: ID!) { book(id: $id) { id title ... on Book { author } } }",
     {"id": BOOKS[1].id.upper()}),
    ("query Q($id: ID!) { book(id: $id) { id } __typename }", {"id": "nope"}),
    ("query Q($s: Boolean!) { books { id @skip(if: $s) ...T @include(if: $s) } } "
     "fragment T on Book { title __typename }", {"s": True}),
    ("query Q($s: Boolean = false) { books @include(if: $s) { id } __typename }", {}),
    ("{ ... on Query { books { ...on Book { author } } } book(id: \"x\") { id } }", None),
]  # fmt: skip


@pytest.mark.parametrize(("query", "variables"), PLANNED)
async def test_common_documents_take_the_plan_and_match(
    engines: Engines, query: str, variables: dict[str, Any] | None
) -> None:
    fast, reference = await both(engines, query, variables)
    assert fast is not None, "this document should be planned"
    assert orjson.dumps(fast) == orjson.dumps(reference)


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        ("{ __schema { queryType { name } } }", None),  # introspection
        ('{ books { title } __type(name: "Book") { name } }', None),
        ("query Q($id: ID!) { book(id: $id) { id } }", {"id": 7}),  # coerced by Tartiflette
        ("query Q($id: ID!) { book(id: $id) { id } }", {}),  # a required value missing
        ("query Q($s: Boolean!) { books @skip(if: $s) { id } }", {"s": "yes"}),
        ("{ books { title } } query Other { books { id } }", None),  # which operation?
        ("{ books { nope } }", None),  # invalid
    ],
)
async def test_what_plans_do_not_cover_goes_to_tartiflette(
    engines: Engines, query: str, variables: dict[str, Any] | None
) -> None:
    fast, _ = await both(engines, query, variables)
    assert fast is None


async def test_the_whole_catalog_once_is_not_charged_and_several_lists_are_in_full(
    engines: Engines,
) -> None:
    # A budget of one book, under a catalog of three (#39): ``books`` is still the whole
    # catalog; two lists (past the document limits, which refuse them first) are charged
    # in full, as the resolvers charge them, so Tartiflette answers QUERY_TOO_MANY_ROWS.
    shape = engines.fast.shape
    tight = FastPath(engines.tartiflette, shape, 8, max_rows=1)
    snapshot = engines.snapshot

    once = tight.execute(
        snapshot, '{ books { id } book(id: "x") { id } }', variables=None, operation_name=None
    )
    twice = tight.execute(
        snapshot, "{ a: books { id } b: books { id } }", variables=None, operation_name=None
    )

    assert once is not None
    assert [book["id"] for book in once["data"]["books"]] == [row[0] for row in snapshot.rows]
    assert len(once["data"]["books"]) == len(BOOKS) > tight.max_rows
    assert twice is None
