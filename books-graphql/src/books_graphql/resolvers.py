"""Resolvers of the catalog schema, bound to a repository (Tartiflette takes them by name)."""

from __future__ import annotations

from typing import Any

from books_graphql.catalog import Book, parse_book_id
from books_graphql.executor import ResolverFunction
from books_graphql.repository import BookRepository


def catalog_resolvers(repository: BookRepository) -> dict[str, ResolverFunction]:
    """``Query.books`` and ``Query.book``; ``Book``'s fields are read as attributes."""

    async def resolve_books(parent: Any, args: dict[str, Any], ctx: Any, info: Any) -> list[Book]:
        return await repository.list_all()

    async def resolve_book(parent: Any, args: dict[str, Any], ctx: Any, info: Any) -> Book | None:
        # An id that is not a UUID names no book: null, like any unknown id.
        book_id = parse_book_id(args["id"])
        return await repository.get(book_id) if book_id is not None else None

    return {"Query.books": resolve_books, "Query.book": resolve_book}
