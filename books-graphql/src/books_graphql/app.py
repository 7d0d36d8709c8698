"""books-graphql application factory."""

from __future__ import annotations

from collections.abc import Callable

from tartiflette.schema.registry import SchemaRegistry

from api_shared.database import install_database
from api_shared.service import create_service_app
from api_shared.types import App
from books_graphql.catalog_snapshot import CatalogSnapshots
from books_graphql.catalog_version import read_version
from books_graphql.database import database_config
from books_graphql.executor import GraphQLExecutor
from books_graphql.fast_path import FastPath
from books_graphql.limits import QueryLimits
from books_graphql.persisted_queries import PersistedQueries
from books_graphql.plan_schema import catalog_shape
from books_graphql.repository import BookRepository
from books_graphql.resolvers import LIST_FIELDS, catalog_resolvers
from books_graphql.response_cache import ResponseCache
from books_graphql.routes import graphql
from books_graphql.sandbox import render_sandbox
from books_graphql.services import seed_catalog
from books_graphql.settings import Settings


def create_app(
    settings: Settings | None = None, *, repository: BookRepository | None = None
) -> App:
    """The service.

    ``repository`` replaces the catalog store (tests pass in-memory fakes); given one, the
    app opens no database of its own, has no catalog version to follow, and so reads it
    through Tartiflette's resolvers on every executed request (no snapshot, no plans).
    """
    settings = settings or Settings()
    # No JSON-only media rules here: GraphQL over HTTP negotiates its own (see protocol).
    app = create_service_app("books-graphql", settings)
    follows_versions = repository is None
    if repository is None:
        install_database(app, database_config(settings))
        repository = BookRepository()
    app.ctx.sandbox = render_sandbox(settings.graphiql_assets_url)
    app.ctx.persisted_queries = PersistedQueries(settings.persisted_queries)
    app.ctx.http_cache_max_age_s = settings.http_cache_max_age_s
    app.ctx.responses = (
        ResponseCache(ttl_s=settings.response_cache_ttl_s, max_bytes=settings.response_cache_bytes)
        if settings.response_cache_ttl_s > 0 and settings.response_cache_bytes > 0
        else None
    )
    limits = QueryLimits(
        max_bytes=settings.max_query_bytes,
        max_depth=settings.max_query_depth,
        max_fields=settings.max_query_fields,
        max_list_fields=settings.max_query_list_fields,
        list_fields=LIST_FIELDS,
    )

    async def start_graphql(app: App) -> None:
        # One engine per process, cooked when the server starts (never at import time).
        executor = await GraphQLExecutor.build(
            catalog_resolvers(repository, max_rows=settings.max_result_rows),
            limits=limits,
            cache_size=settings.query_cache_size,
        )
        app.ctx.graphql = executor
        shape = catalog_shape(SchemaRegistry.find_schema(executor.schema_name))
        app.ctx.fast_path = FastPath(
            executor, shape, settings.query_cache_size, max_rows=settings.max_result_rows
        )
        app.ctx.catalog = (
            CatalogSnapshots(
                repository,
                row=shape.row,
                read_version=read_version,
                check_interval_s=settings.catalog_check_ms / 1000,
                max_age_s=settings.catalog_max_age_s,
                on_new_version=_forget_answers(app),
            )
            if follows_versions
            else None
        )

    async def seed(app: App) -> None:
        if settings.seed_file is not None:
            await seed_catalog(repository, settings.seed_file)

    app.register_listener(start_graphql, "before_server_start")
    # Registered after install_database's listener: the ORM is open when this runs.
    app.register_listener(seed, "before_server_start")
    app.blueprint(graphql)
    return app


def _forget_answers(app: App) -> Callable[[int], None]:
    """On a new catalog version, free the memory of answers that can never be replayed."""

    def forget(version: int) -> None:
        if app.ctx.responses is not None:
            app.ctx.responses.clear()

    return forget
