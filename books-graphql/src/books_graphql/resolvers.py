"""Resolvers of the catalog schema, bound to a repository (Tartiflette takes them by name).

Root fields read the store through the request's ``RequestWork``: once per request for the
same arguments, and within its row budget.
"""

from __future__ import annotations

from typing import Any

from api_shared.ids import parse_id
from books_graphql.catalog import Book
from books_graphql.executor import ResolverFunction
from books_graphql.paging import BookPage, book_page, decode_cursor, page_size
from books_graphql.repository import BookRepository
from books_graphql.request_work import RequestWork

# The fields whose answer grows with the catalog: the document limits count them.
LIST_FIELDS = frozenset({"books", "booksConnection"})


def catalog_resolvers(repository: BookRepository, *, max_rows: int) -> dict[str, ResolverFunction]:
    """``Query``'s fields and ``BookConnection.totalCount``; the rest are read as attributes."""

    async def resolve_books(parent: Any, args: dict[str, Any], ctx: Any, info: Any) -> list[Book]:
        work = RequestWork.of(ctx, max_rows)
        books = await work.read_once("books", repository.list_all)
        work.charge(len(books))
        return books

    async def resolve_book(parent: Any, args: dict[str, Any], ctx: Any, info: Any) -> Book | None:
        # An id that is not a UUID names no book: null, like any unknown id.
        book_id = parse_id(args["id"])
        if book_id is None:
            return None
        work = RequestWork.of(ctx, max_rows)
        return await work.read_once(("book", book_id), lambda: repository.get(book_id))

    async def resolve_books_connection(
        parent: Any, args: dict[str, Any], ctx: Any, info: Any
    ) -> BookPage:
        size = page_size(args.get("first"))
        position = decode_cursor(args.get("after"))
        work = RequestWork.of(ctx, max_rows)
        # One more than the page tells whether another page follows.
        books = await work.read_once(
            ("booksConnection", size, position), lambda: repository.page_after(position, size + 1)
        )
        work.charge(min(len(books), size))
        return book_page(books, size)

    async def resolve_total_count(parent: Any, args: dict[str, Any], ctx: Any, info: Any) -> int:
        return await RequestWork.of(ctx, max_rows).read_once("totalCount", repository.count)

    return {
        "Query.books": resolve_books,
        "Query.book": resolve_book,
        "Query.booksConnection": resolve_books_connection,
        "BookConnection.totalCount": resolve_total_count,
    }
