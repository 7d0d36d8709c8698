"""books-graphql's context: the parts its handlers work with, built once by ``wire``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sanic import Request

from api_shared.context import Resource
from books_graphql.catalog_version import read_version
from books_graphql.database import database_config
from books_graphql.engine import GraphQLEngine
from books_graphql.http.persisted_queries import PersistedQueries
from books_graphql.http.response_cache import ResponseCache
from books_graphql.http.sandbox import SandboxPage, render_sandbox
from books_graphql.limits import QueryLimits
from books_graphql.plans.snapshot import CatalogSnapshots
from books_graphql.ports import BookStore
from books_graphql.repository import BookRepository
from books_graphql.resolvers import LIST_FIELDS, WHOLE_CATALOG_FIELDS
from books_graphql.services import BookService, CatalogSeeding
from books_graphql.settings import Settings


@dataclass(frozen=True, slots=True)
class Context:
    settings: Settings
    books: BookService
    graphql: GraphQLEngine  # cooked when the server starts (a resource)
    # The catalog in memory; None when the store is the caller's, which has no version to
    # follow: every executed request then reads it through the resolvers (no plans).
    catalog: CatalogSnapshots | None
    responses: ResponseCache | None  # None: turned off by settings
    persisted_queries: PersistedQueries
    sandbox: SandboxPage | None  # None: switched off (BOOKS_GRAPHIQL)
    # The ORM configuration ``create_app`` opens; None when the store is the caller's.
    database: dict[str, Any] | None
    resources: tuple[Resource, ...]  # started and stopped by install_context


def wire(settings: Settings, *, repository: BookStore | None = None) -> Context:
    """Build every part from ``settings``; ``repository`` replaces the catalog's store (tests)."""
    books = BookService(BookRepository() if repository is None else repository)
    limits = QueryLimits(
        max_bytes=settings.max_query_bytes,
        max_depth=settings.max_query_depth,
        max_fields=settings.max_query_fields,
        max_list_fields=settings.max_query_list_fields,
        list_fields=LIST_FIELDS,
        whole_list_fields=WHOLE_CATALOG_FIELDS,
    )
    engine = GraphQLEngine(
        books,
        limits=limits,
        cache_size=settings.query_cache_size,
        max_rows=settings.max_result_rows,
        introspection=settings.introspection_on,
    )
    responses = (
        ResponseCache(ttl_s=settings.response_cache_ttl_s, max_bytes=settings.response_cache_bytes)
        if settings.response_cache_ttl_s > 0 and settings.response_cache_bytes > 0
        else None
    )
    catalog = (
        CatalogSnapshots(
            books,
            row=engine.row,
            read_version=read_version,
            check_interval_s=settings.catalog_check_ms / 1000,
            max_age_s=settings.catalog_max_age_s,
            on_new_version=_forget_answers(responses),
        )
        if repository is None
        else None
    )
    seeding = () if settings.seed_file is None else (CatalogSeeding(books, settings.seed_file),)
    return Context(
        settings=settings,
        books=books,
        graphql=engine,
        catalog=catalog,
        responses=responses,
        persisted_queries=PersistedQueries(settings.persisted_queries),
        sandbox=render_sandbox(settings.graphiql_assets_url) if settings.graphiql_on else None,
        database=database_config(settings) if repository is None else None,
        resources=(engine, *seeding),
    )


def context_of(request: Request) -> Context:
    """The typed context of the app serving ``request``."""
    context: Context = request.app.ctx.context
    return context


def _forget_answers(responses: ResponseCache | None) -> Callable[[int], None] | None:
    """On a new catalog version, free the memory of answers that can never be replayed."""
    if responses is None:
        return None

    def forget(version: int) -> None:
        responses.clear()

    return forget
