"""``booksConnection``'s rules: page sizes, opaque cursors and the shape of a page.

A cursor is the position of a book in the order of the connection, (title, id), encoded
so that clients treat it as opaque. Being a position rather than an index, it stays valid
when books are added or removed: the next page starts after that position, wherever it
now is, and returns no book twice.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

import orjson
from tartiflette.types.exceptions.tartiflette import TartifletteError

from api_shared.ids import parse_id
from books_graphql.catalog import MAX_TITLE_LENGTH, Book

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
BAD_USER_INPUT = "BAD_USER_INPUT"
# The longest cursor of a real position (a title of MAX_TITLE_LENGTH characters of up to
# 4 UTF-8 bytes, the id, the JSON around them), in base64: longer input is refused unread.
MAX_CURSOR_LENGTH = (4 * MAX_TITLE_LENGTH * 6 + 64) * 4 // 3 + 4


def bad_user_input(message: str) -> TartifletteError:
    """A GraphQL error about an argument's value, with a stable ``extensions.code``."""
    return TartifletteError(message, extensions={"code": BAD_USER_INPUT})


def page_size(first: int | None) -> int:
    """``first`` checked: 0 to ``MAX_PAGE_SIZE``; null means the default."""
    if first is None:
        return DEFAULT_PAGE_SIZE
    if not 0 <= first <= MAX_PAGE_SIZE:
        raise bad_user_input(
            f"first must be between 0 and {MAX_PAGE_SIZE} (was {first}); "
            "read further pages with after."
        )
    return first


def encode_cursor(book: Book) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([book.title, book.id])).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> tuple[str, str] | None:
    """The (title, id) position a cursor names; None for none; an error for a bad one."""
    if cursor is None:
        return None
    try:
        if len(cursor) > MAX_CURSOR_LENGTH:
            raise ValueError("too long")
        title, book_id = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not isinstance(title, str) or not isinstance(book_id, str):
            raise ValueError("not a position")
        parsed = parse_id(book_id)
        if parsed is None:
            raise ValueError("not an id")
    except (ValueError, TypeError, binascii.Error, orjson.JSONDecodeError):
        raise bad_user_input(
            "after is not a cursor of booksConnection; pass the endCursor of a page."
        ) from None
    return title, str(parsed)


@dataclass(frozen=True, slots=True)
class BookEdge:
    cursor: str
    node: Book


@dataclass(frozen=True, slots=True)
class PageInfo:
    hasNextPage: bool  # noqa: N815 - GraphQL's field names, read as attributes
    endCursor: str | None  # noqa: N815
    startCursor: str | None  # noqa: N815
    hasPreviousPage: bool = False  # noqa: N815


@dataclass(frozen=True, slots=True)
class BookPage:
    """A page as ``BookConnection`` reads it (``totalCount`` has a resolver of its own)."""

    edges: list[BookEdge]
    pageInfo: PageInfo  # noqa: N815


def book_page(books: list[Book], size: int) -> BookPage:
    """The page of ``size`` books out of ``books``, read with one extra to see what follows."""
    edges = [BookEdge(cursor=encode_cursor(book), node=book) for book in books[:size]]
    return BookPage(
        edges=edges,
        pageInfo=PageInfo(
            hasNextPage=len(books) > size,
            endCursor=edges[-1].cursor if edges else None,
            startCursor=edges[0].cursor if edges else None,
        ),
    )
