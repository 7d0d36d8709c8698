"""What the compiled query plans can answer, read from the cooked schema (never hard-coded).

The fast path (plans.fast_path) answers a document without Tartiflette only when every field it
selects is one this module recognised in the schema:

- root fields that read the in-memory catalog: a list of every book (``[Book!]!``, no
  arguments) and a book by id (``Book`` nullable, one ``id: ID!`` argument). The field names
  come from ``ROOT_FIELDS``, and each is taken only if the schema still gives it that shape;
- the book type's fields that are non-null ``String``/``ID`` attributes of ``catalog.Book``
  (``__typename`` too). A field the schema adds later (an object, a list, a connection) is
  unknown here, so documents selecting it go to Tartiflette.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from books_graphql.catalog import Book

TYPENAME = "__typename"
# Output scalars whose value, a str read from the catalog, Tartiflette returns unchanged.
PLAIN_STRING_SCALARS = frozenset({"String", "ID"})


class RootKind(enum.Enum):
    ALL_BOOKS = "all books"
    BOOK_BY_ID = "book by id"


# Root fields answered from the snapshot, by name (the resolvers of the same names in
# resolvers.py are the reference: same data, same order, same "unknown id is null" rule).
ROOT_FIELDS: Mapping[str, RootKind] = {"books": RootKind.ALL_BOOKS, "book": RootKind.BOOK_BY_ID}


@dataclass(frozen=True, slots=True)
class CatalogShape:
    """The part of the schema the plans cover."""

    query_type: str
    book_type: str
    roots: Mapping[str, RootKind]
    columns: tuple[str, ...]  # the book's readable fields, then __typename

    def row(self, book: Book) -> tuple[str, ...]:
        """A book's values in ``columns`` order (precomputed once per snapshot)."""
        return (*(getattr(book, name) for name in self.columns[:-1]), self.book_type)


def catalog_shape(schema: Any) -> CatalogShape:
    """Read the shape from a cooked Tartiflette schema."""
    query_type = schema.query_operation_name
    query_fields = schema.find_type(query_type).implemented_fields
    book_type: str | None = None
    roots: dict[str, RootKind] = {}
    for name, kind in ROOT_FIELDS.items():
        field = query_fields.get(name)
        if field is None:
            continue
        target = _root_target(field, kind)
        if target is not None and book_type in (None, target):
            book_type = target
            roots[name] = kind
    if book_type is None:
        return CatalogShape(query_type, "", {}, (TYPENAME,))
    readable = set(Book.__slots__)
    columns = tuple(
        name
        for name, field in schema.find_type(book_type).implemented_fields.items()
        if name in readable and _is_plain_string(field.gql_type)
    )
    return CatalogShape(query_type, book_type, roots, (*columns, TYPENAME))


def _root_target(field: Any, kind: RootKind) -> str | None:
    """The book type a root field returns, when its shape is the one ``kind`` needs."""
    shape, name = _unwrap(field.gql_type)
    arguments = field.arguments
    if kind is RootKind.ALL_BOOKS and shape == ("NonNull", "List", "NonNull") and not arguments:
        return name
    if (
        kind is RootKind.BOOK_BY_ID
        and shape == ()
        and set(arguments) == {"id"}
        and _unwrap(arguments["id"].gql_type) == (("NonNull",), "ID")
    ):
        return name
    return None


def _unwrap(gql_type: Any) -> tuple[tuple[str, ...], str]:
    """``[Book!]!`` → (("NonNull", "List", "NonNull"), "Book")."""
    wrappers: list[str] = []
    while not isinstance(gql_type, str):
        wrappers.append("List" if type(gql_type).__name__ == "GraphQLList" else "NonNull")
        gql_type = gql_type.gql_type
    return tuple(wrappers), gql_type


def _is_plain_string(gql_type: Any) -> bool:
    shape, name = _unwrap(gql_type)
    return shape == ("NonNull",) and name in PLAIN_STRING_SCALARS
