"""Answering a GraphQL request: from its parameters to its ``Answer`` (bytes, status, caching).

The step between the HTTP handler (routes: it reads the request and writes the answer) and
the engine, in the order of the protocol:

1. a persisted query is resolved (http.persisted_queries): a refusal is the answer;
2. the document is prepared (limits, parsing, validation; cached by its text) and, once
   valid, registered under its hash; a request that may run only queries (a GET) and
   selects another operation is refused (405);
3. a query of a valid document is answered over the catalog in memory: the current
   snapshot is read (plans.snapshot), and the response cache replays an answer of its
   version (http.response_cache);
4. otherwise the request is executed: by its compiled plan over the snapshot (plans.fast_path),
   else by Tartiflette, whose request errors are 400 with
   ``application/graphql-response+json`` (http.protocol.http_status).

Every request goes through here: nothing is awaited or built that the request does not
need, and a replayed answer is the very object the cache keeps.
"""

from __future__ import annotations

import logging
from typing import Protocol

import orjson

from api_shared.errors import MethodNotAllowedError
from books_graphql.engine import GraphQLEngine
from books_graphql.http.answer import Answer, Caching
from books_graphql.http.persisted_queries import PersistedQueries, Refusal
from books_graphql.http.protocol import GraphQLParams, http_status
from books_graphql.http.response_cache import ResponseCache, cache_key
from books_graphql.plans.snapshot import CatalogSnapshot, CatalogSnapshots

logger = logging.getLogger(__name__)


class AnsweringParts(Protocol):
    """What answering works with: the service's context has these parts (``context.Context``)."""

    @property
    def graphql(self) -> GraphQLEngine: ...

    @property
    def catalog(self) -> CatalogSnapshots | None: ...

    @property
    def responses(self) -> ResponseCache | None: ...

    @property
    def persisted_queries(self) -> PersistedQueries: ...


async def answer(
    context: AnsweringParts,
    params: GraphQLParams,
    *,
    media_type: str,
    queries_only: bool,
    request_id: str,
) -> Answer:
    """The answer to ``params``, negotiated as ``media_type``; ``queries_only`` for a GET."""
    persisted_queries = context.persisted_queries
    persisted = persisted_queries.resolve(params.query, params.extensions)
    if isinstance(persisted, Refusal):
        return Answer(persisted.body(), persisted.status, Caching.NO_STORE)
    query = params.query if persisted is None else persisted.query
    assert query is not None  # protocol: only a persisted query may come without one

    executor = context.graphql.executor
    prepared = executor.prepare(query)
    if persisted is not None and persisted.register_as and prepared.errors is None:
        persisted_queries.register(persisted.register_as, query)
    operation_type = prepared.operation_type(params.operation_name)
    if queries_only and operation_type not in (None, "query"):
        raise MethodNotAllowedError(
            ["POST"], f"A {operation_type} cannot be sent with GET; use POST."
        )

    plannable = prepared.errors is None and operation_type == "query"
    catalog = context.catalog
    snapshot: CatalogSnapshot | None = None
    if plannable and catalog is not None:
        try:  # awaited here, not in a helper: one coroutine fewer on every query
            snapshot = await catalog.current()
        except Exception:  # the database's failure, whatever its driver calls it
            # Tartiflette answers, through the resolvers, which report an outage as one.
            logger.warning(
                "catalog version check failed; executing with the resolvers", exc_info=True
            )

    async def execute() -> Answer:
        if snapshot is not None:
            planned = context.graphql.fast_path.execute(
                snapshot,
                query,
                variables=params.variables,
                operation_name=params.operation_name,
            )
            if planned is not None:
                return Answer(orjson.dumps(planned), 200, Caching.REPLAYABLE)
        result = await executor.execute(
            prepared,
            query,
            variables=params.variables,
            operation_name=params.operation_name,
            request_id=request_id,
        )
        status = http_status(media_type, is_request_error=result.is_request_error)
        caching = Caching.NOT_REPLAYABLE if "errors" in result.body else Caching.REPLAYABLE
        return Answer(orjson.dumps(result.body), status, caching)

    cache = context.responses
    # Without a known catalog version (its check failed), nothing is replayed.
    if cache is not None and plannable and (catalog is None or snapshot is not None):
        key = cache_key(query, params.operation_name, params.variables)
        return await cache.fetch(key, execute, version=0 if snapshot is None else snapshot.version)
    return await execute()
