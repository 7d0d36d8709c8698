"""books-graphql application factory."""

from __future__ import annotations

from api_shared.database import install_database
from api_shared.service import create_service_app
from api_shared.types import App
from books_graphql.database import database_config
from books_graphql.executor import GraphQLExecutor
from books_graphql.limits import QueryLimits
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
    app opens no database of its own.
    """
    settings = settings or Settings()
    # No JSON-only media rules here: GraphQL over HTTP negotiates its own (see protocol).
    app = create_service_app("books-graphql", settings)
    if repository is None:
        install_database(app, database_config(settings))
        repository = BookRepository()
    app.ctx.sandbox = render_sandbox(settings.graphiql_assets_url)
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
        app.ctx.graphql = await GraphQLExecutor.build(
            catalog_resolvers(repository, max_rows=settings.max_result_rows),
            limits=limits,
            cache_size=settings.query_cache_size,
        )

    async def seed(app: App) -> None:
        if settings.seed_file is not None:
            await seed_catalog(repository, settings.seed_file)

    app.register_listener(start_graphql, "before_server_start")
    # Registered after install_database's listener: the ORM is open when this runs.
    app.register_listener(seed, "before_server_start")
    app.blueprint(graphql)
    return app
