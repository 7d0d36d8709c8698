"""Tortoise queries for books; nothing else in the service touches the ORM."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from api_shared.transactions import in_transaction
from books_graphql import models
from books_graphql.catalog import Book
from books_graphql.catalog_version import bump_version

# One keyset page by (title, id), code-point order on both backends (the "C" collation on
# PostgreSQL, SQLite's default BINARY): the statement the index ``books_title_id`` serves
# (migration 0002), whatever the page — no OFFSET. bench/books_connection_plan.py EXPLAINs it.
KEYSET_SQL = {
    "postgres": {
        "first": 'SELECT id, title, author FROM books ORDER BY title COLLATE "C", id LIMIT $1',
        "after": (
            "SELECT id, title, author FROM books "
            'WHERE (title COLLATE "C", id) > ($1, $2) '
            'ORDER BY title COLLATE "C", id LIMIT $3'
        ),
    },
    "sqlite": {
        "first": "SELECT id, title, author FROM books ORDER BY title, id LIMIT ?",
        "after": (
            "SELECT id, title, author FROM books WHERE (title, id) > (?, ?) "
            "ORDER BY title, id LIMIT ?"
        ),
    },
}
COUNT_SQL = "SELECT COUNT(*) AS n FROM books"


class BookRepository:
    async def list_all(self) -> list[Book]:
        """Every book, by title then id.

        Sorted here rather than by the database: collations differ (PostgreSQL's locale
        ignores spaces, SQLite compares bytes) and the order must not depend on the backend.
        """
        rows = await models.Book.all().values_list("id", "title", "author")
        books = [Book(id=str(id_), title=title, author=author) for id_, title, author in rows]
        books.sort(key=lambda book: (book.title.casefold(), book.id))
        return books

    async def page_after(self, position: tuple[str, str] | None, limit: int) -> list[Book]:
        """Up to ``limit`` books following ``position`` (title, id), by title then id.

        The order is by code point, the same on every backend (see ``KEYSET_SQL``); it
        differs from ``list_all``'s case-insensitive order, which needs every row.
        """
        db = models.Book._meta.db
        statements = KEYSET_SQL[db.capabilities.dialect]
        if position is None:
            rows = await db.execute_query_dict(statements["first"], [limit])
        else:
            title, book_id = position
            key: UUID | str = UUID(book_id) if db.capabilities.dialect == "postgres" else book_id
            rows = await db.execute_query_dict(statements["after"], [title, key, limit])
        return [Book(id=str(row["id"]), title=row["title"], author=row["author"]) for row in rows]

    async def count(self) -> int:
        rows = await models.Book._meta.db.execute_query_dict(COUNT_SQL)
        return int(rows[0]["n"])

    async def get(self, book_id: UUID) -> Book | None:
        rows = await models.Book.filter(id=book_id).limit(1).values_list("id", "title", "author")
        if not rows:
            return None
        id_, title, author = rows[0]
        return Book(id=str(id_), title=title, author=author)

    async def add_missing(self, books: Sequence[Book]) -> int:
        """Insert the books whose id is not stored yet; return how many were new.

        Insert-if-absent (``ON CONFLICT DO NOTHING``), so replicas seeding at the same time
        and repeated imports are safe; the count is exact unless another writer races us.
        """
        unique = {book.id: book for book in reversed(books)}  # the first of duplicates wins
        if not unique:
            return 0
        ids = [UUID(book_id) for book_id in unique]
        present = {
            str(id_) for id_ in await models.Book.filter(id__in=ids).values_list("id", flat=True)
        }
        missing = [book for book_id, book in unique.items() if book_id not in present]
        if missing:
            # The version moves in the same transaction: a replica that reads it also
            # reads these books (catalog_version).
            async with in_transaction() as connection:
                await models.Book.bulk_create(
                    [models.Book(id=UUID(b.id), title=b.title, author=b.author) for b in missing],
                    ignore_conflicts=True,
                    using_db=connection,
                )
                await bump_version(connection)
        return len(missing)
