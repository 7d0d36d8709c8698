"""books-graphql application factory."""

from __future__ import annotations

from api_shared.context import install_context
from api_shared.database import install_database
from api_shared.service_app import create_service_app
from api_shared.types import App
from books_graphql.context import Context, wire
from books_graphql.routes import graphql
from books_graphql.settings import Settings


def create_app(settings: Settings | None = None, *, context: Context | None = None) -> App:
    """The service; ``context`` replaces what ``wire`` builds from ``settings`` (tests)."""
    settings = settings or Settings()
    context = context or wire(settings)
    # No JSON-only media rules here: GraphQL over HTTP negotiates its own (see http.protocol).
    app = create_service_app("books-graphql", settings)
    if context.database is not None:
        install_database(app, context.database)
    install_context(app, context)
    app.blueprint(graphql)
    return app
