"""A document measured against the limits, before it is parsed: its size, then one scan."""

from __future__ import annotations

from books_graphql.limits.bounds import DocumentShape, LimitExceeded, QueryLimits, too_large
from books_graphql.limits.scan import scan
from books_graphql.limits.totals import totals


def check_limits(query: str, limits: QueryLimits) -> DocumentShape | LimitExceeded:
    """Measure ``query`` against ``limits``: its shape, or why it is refused."""
    refused = too_large(query, limits)
    if refused is not None:
        return refused
    definitions = scan(query, limits)
    if isinstance(definitions, LimitExceeded):
        return definitions
    return totals(definitions, limits)
