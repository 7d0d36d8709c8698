"""books-graphql's context: the parts its handlers work with, built once by ``wire``.

``wire`` only composes: the engine is built by ``engine.wire_engine``, the HTTP layer's parts
by ``http.wiring``, the catalog kept in memory by ``plans.wiring``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sanic import Request

from api_shared.context import Resource
from books_graphql.database import database_config
from books_graphql.engine import GraphQLEngine, wire_engine
from books_graphql.http.persisted_queries import PersistedQueries
from books_graphql.http.response_cache import ResponseCache
from books_graphql.http.sandbox import SandboxPage
from books_graphql.http.wiring import wire_http
from books_graphql.plans.snapshot import CatalogSnapshots
from books_graphql.plans.wiring import wire_catalog
from books_graphql.ports import BookStore
from books_graphql.repository import BookRepository
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
    engine = wire_engine(settings, books)
    answers = wire_http(settings)
    forget = _forget_answers(answers.responses)
    catalog = (
        wire_catalog(settings, books, row=engine.row, on_new_version=forget)
        if repository is None
        else None
    )
    seeding = () if settings.seed_file is None else (CatalogSeeding(books, settings.seed_file),)
    return Context(
        settings=settings,
        books=books,
        graphql=engine,
        catalog=catalog,
        responses=answers.responses,
        persisted_queries=answers.persisted_queries,
        sandbox=answers.sandbox,
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
