"""The HTTP layer's part of the service's wiring: the answers kept for replay, the persisted
queries, and the GraphiQL page."""

from __future__ import annotations

from dataclasses import dataclass

from books_graphql.http.persisted_queries import PersistedQueries
from books_graphql.http.response_cache import ResponseCache
from books_graphql.http.sandbox import SandboxPage, render_sandbox
from books_graphql.settings import Settings


@dataclass(frozen=True, slots=True)
class HttpPart:
    responses: ResponseCache | None  # None: turned off by settings
    persisted_queries: PersistedQueries
    sandbox: SandboxPage | None  # None: switched off (BOOKS_GRAPHIQL)


def wire_http(settings: Settings) -> HttpPart:
    keep_answers = settings.response_cache_ttl_s > 0 and settings.response_cache_bytes > 0
    return HttpPart(
        responses=(
            ResponseCache(
                ttl_s=settings.response_cache_ttl_s, max_bytes=settings.response_cache_bytes
            )
            if keep_answers
            else None
        ),
        persisted_queries=PersistedQueries(settings.persisted_queries),
        sandbox=render_sandbox(settings.graphiql_assets_url) if settings.graphiql_on else None,
    )
