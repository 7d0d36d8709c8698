"""The plans' part of the service's wiring: the catalog kept in memory, following its version."""

from __future__ import annotations

from collections.abc import Callable

from books_graphql.catalog import Book
from books_graphql.catalog_version import read_version
from books_graphql.plans.snapshot import CatalogSnapshots, Row
from books_graphql.services import BookService
from books_graphql.settings import Settings


def wire_catalog(
    settings: Settings,
    books: BookService,
    *,
    row: Callable[[Book], Row],
    on_new_version: Callable[[int], None] | None,
) -> CatalogSnapshots:
    """The snapshots of the catalog in ``books``' store, each book kept as ``row`` makes it;
    ``on_new_version`` is told when the catalog's version changes."""
    return CatalogSnapshots(
        books,
        row=row,
        read_version=read_version,
        check_interval_s=settings.catalog_check_ms / 1000,
        max_age_s=settings.catalog_max_age_s,
        on_new_version=on_new_version,
    )
