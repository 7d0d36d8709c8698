"""The served GraphQL engine: Tartiflette's executor and the fast path, cooked at start-up.

Cooking registers a schema and its resolvers in Tartiflette's process-wide registry
(executor), so it happens when the server starts, never at import time or in ``wire``:
``GraphQLEngine`` is a context resource, and its parts exist once ``start`` has run.
"""

from __future__ import annotations

from dataclasses import dataclass

from tartiflette.schema.registry import SchemaRegistry

from books_graphql.catalog import Book
from books_graphql.executor import GraphQLExecutor
from books_graphql.limits.bounds import QueryLimits
from books_graphql.plans.fast_path import FastPath
from books_graphql.plans.shape import catalog_shape
from books_graphql.plans.snapshot import Row
from books_graphql.resolvers import LIST_FIELDS, WHOLE_CATALOG_FIELDS, catalog_resolvers
from books_graphql.services import BookService
from books_graphql.settings import Settings


@dataclass(frozen=True, slots=True)
class _Cooked:
    executor: GraphQLExecutor
    fast_path: FastPath


class GraphQLEngine:
    """One engine per served app, over the book service."""

    def __init__(
        self,
        books: BookService,
        *,
        limits: QueryLimits,
        cache_size: int,
        max_rows: int,
        introspection: bool = True,
    ) -> None:
        self.books = books
        self.limits = limits
        self.cache_size = cache_size
        self.max_rows = max_rows
        self.introspection = introspection
        self._cooked: _Cooked | None = None

    async def start(self) -> None:
        executor = await GraphQLExecutor.build(
            catalog_resolvers(self.books, max_rows=self.max_rows),
            limits=self.limits,
            cache_size=self.cache_size,
            introspection=self.introspection,
        )
        shape = catalog_shape(SchemaRegistry.find_schema(executor.schema_name))
        fast_path = FastPath(executor, shape, self.cache_size, max_rows=self.max_rows)
        self._cooked = _Cooked(executor, fast_path)

    async def stop(self) -> None:
        """Nothing to release: Tartiflette keeps a cooked schema for the process's life."""

    @property
    def executor(self) -> GraphQLExecutor:
        return self._started().executor

    @property
    def fast_path(self) -> FastPath:
        return self._started().fast_path

    def row(self, book: Book) -> Row:
        """A book's values in the columns the plans read (the snapshot keeps them)."""
        return self.fast_path.shape.row(book)

    def _started(self) -> _Cooked:
        if self._cooked is None:
            raise RuntimeError("the GraphQL engine is cooked when the server starts")
        return self._cooked


def wire_engine(settings: Settings, books: BookService) -> GraphQLEngine:
    """The engine over ``books``, holding each document to the configured limits."""
    limits = QueryLimits(
        max_bytes=settings.max_query_bytes,
        max_depth=settings.max_query_depth,
        max_fields=settings.max_query_fields,
        max_list_fields=settings.max_query_list_fields,
        list_fields=LIST_FIELDS,
        whole_list_fields=WHOLE_CATALOG_FIELDS,
    )
    return GraphQLEngine(
        books,
        limits=limits,
        cache_size=settings.query_cache_size,
        max_rows=settings.max_result_rows,
        introspection=settings.introspection_on,
    )
