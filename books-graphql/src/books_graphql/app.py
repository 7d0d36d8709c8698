"""books-graphql application factory."""

from __future__ import annotations

from api_shared.service import create_service_app
from api_shared.types import App
from books_graphql.settings import Settings


def create_app(settings: Settings | None = None) -> App:
    settings = settings or Settings()
    return create_service_app("books-graphql", settings)
