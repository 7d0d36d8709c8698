"""Resolvers of the catalog schema, bound to the book service (Tartiflette takes them by name).

Root fields read the catalog through the request's ``RequestWork``: once per request for the
same arguments, and within its row budget.
"""

from __future__ import annotations

from typing import Any

from api_shared.ids import parse_id
from books_graphql.catalog import Book
from books_graphql.executor import ResolverFunction
from books_graphql.paging import BookPage, decode_cursor, page_size
from books_graphql.request_work import RequestWork
from books_graphql.services import BookService

# The fields whose answer grows with the catalog: the document limits count them.
LIST_FIELDS = frozenset({"books", "booksConnection"})
# The fields that answer the whole catalog: an operation may select them under one name.
WHOLE_CATALOG_FIELDS = frozenset({"books"})


def catalog_resolvers(books: BookService, *, max_rows: int) -> dict[str, ResolverFunction]:
    """``Query``'s fields and ``BookConnection.totalCount``; the rest are read as attributes."""

    async def resolve_books(parent: Any, args: dict[str, Any], ctx: Any, info: Any) -> list[Book]:
        work = RequestWork.of(ctx, max_rows)
        every_book = await work.read_once("books", books.all_books)
        work.charge(len(every_book))
        return every_book

    async def resolve_book(parent: Any, args: dict[str, Any], ctx: Any, info: Any) -> Book | None:
        # An id that is not a UUID names no book: null, like any unknown id.
        book_id = parse_id(args["id"])
        if book_id is None:
            return None
        work = RequestWork.of(ctx, max_rows)
        return await work.read_once(("book", book_id), lambda: books.book(book_id))

    async def resolve_books_connection(
        parent: Any, args: dict[str, Any], ctx: Any, info: Any
    ) -> BookPage:
        size = page_size(args.get("first"))
        position = decode_cursor(args.get("after"))
        work = RequestWork.of(ctx, max_rows)
        page = await work.read_once(
            ("booksConnection", size, position), lambda: books.page(position, size)
        )
        work.charge(len(page.edges))
        return page

    async def resolve_total_count(parent: Any, args: dict[str, Any], ctx: Any, info: Any) -> int:
        return await RequestWork.of(ctx, max_rows).read_once("totalCount", books.count)

    return {
        "Query.books": resolve_books,
        "Query.book": resolve_book,
        "Query.booksConnection": resolve_books_connection,
        "BookConnection.totalCount": resolve_total_count,
    }
