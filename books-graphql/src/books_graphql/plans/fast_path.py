"""Queries answered by compiled plans over the catalog snapshot; the rest by Tartiflette.

Tartiflette stays the parser, the validator and the reference executor: a document reaches
a plan only after ``GraphQLExecutor.prepare`` accepted it, and whatever a plan does not
cover (see plans.shape and plans.compiler), or a variable value it does not take for
certain (plans.variables), is executed by Tartiflette. tests/unit/test_fast_path_matches
compares both on generated documents.

Plans are compiled once per (query text, operation name) and kept in a bounded LRU cache,
like prepared documents; a document that cannot be planned is remembered as such.
"""

from __future__ import annotations

import functools
from typing import Any

from books_graphql.executor import GraphQLExecutor
from books_graphql.plans.compiler import QueryPlan, compile_plan
from books_graphql.plans.shape import CatalogShape
from books_graphql.plans.snapshot import CatalogSnapshot
from books_graphql.plans.variables import UnsupportedError


class FastPath:
    def __init__(
        self, executor: GraphQLExecutor, shape: CatalogShape, cache_size: int, *, max_rows: int
    ) -> None:
        self.executor = executor
        self.shape = shape
        # The row budget of lists beyond the whole catalog's one (request_work, compiler).
        self.max_rows = max_rows
        self.plan = functools.lru_cache(maxsize=max(cache_size, 1))(self._plan)

    def _plan(self, query: str, operation_name: str | None) -> QueryPlan | None:
        """The plan of a valid query, None when Tartiflette must execute it."""
        prepared = self.executor.prepare(query)
        if prepared.errors is not None or prepared.document is None:
            return None
        try:
            return compile_plan(prepared.document, operation_name, self.shape)
        except UnsupportedError:
            return None

    def execute(
        self,
        snapshot: CatalogSnapshot,
        query: str,
        *,
        variables: dict[str, Any] | None,
        operation_name: str | None,
    ) -> dict[str, Any] | None:
        """The response body, or None when Tartiflette must execute the request."""
        plan = self.plan(query, operation_name)
        return None if plan is None else plan.run(snapshot, variables, max_rows=self.max_rows)
