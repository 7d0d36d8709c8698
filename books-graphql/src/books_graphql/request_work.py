"""The work one GraphQL request may cause: each root read once, a bounded number of rows.

Aliases let one document ask for the same root field hundreds of times, each under a new
name (which also defeats any cache keyed by the query text). Two rules bound that:

- a root field with the same arguments is read from the store once per request, however
  many times it is selected (``read_once``): the others share the first read's answer;
- every list of books resolved counts its rows, memoised or not (each alias is still
  serialised), and a request whose lists together pass ``max_rows`` fails with the
  error ``QUERY_TOO_MANY_ROWS`` (``charge``). The document limits (``limits``) bound
  beforehand how many lists of books a document may select, and let an operation select
  the whole catalog (``books``) under one name only.

A query of ``books`` (with ``book`` and ``__typename`` beside it at most) is answered by its
compiled plan, which builds the whole catalog at about 0.3 µs a book and does not
charge that one list (plans.compiler): ``books`` returns every book, whatever the catalog's
size. The resolvers here run for what the plans do not cover (``booksConnection``,
introspection, variables that need coercing), field by field at some two hundred times
that cost: there ``books`` counts like any list, so a caller cannot buy seconds of work per
request by adding a field the plans do not cover.

One ``RequestWork`` lives in the context Tartiflette gives every resolver of a request.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

from tartiflette.types.exceptions.tartiflette import TartifletteError

T = TypeVar("T")

CONTEXT_KEY = "work"
TOO_MANY_ROWS = "QUERY_TOO_MANY_ROWS"


class RequestWork:
    def __init__(self, max_rows: int) -> None:
        self.max_rows = max_rows
        self.rows = 0
        self._reads: dict[Hashable, asyncio.Future[Any]] = {}

    @classmethod
    def of(cls, context: Any, max_rows: int) -> RequestWork:
        """The request's own, created by its first resolver."""
        work: RequestWork = context.setdefault(CONTEXT_KEY, cls(max_rows))
        return work

    async def read_once(self, key: Hashable, read: Callable[[], Awaitable[T]]) -> T:
        """``read()``'s answer, read at most once per ``key`` in this request.

        The read is shared as a future, so fields resolved concurrently wait for the one
        read rather than starting their own.
        """
        future = self._reads.get(key)
        if future is None:
            future = self._reads[key] = asyncio.ensure_future(read())
        result: T = await future
        return result

    def charge(self, rows: int) -> None:
        """Count ``rows`` books produced; refuse once the request's lists pass the budget."""
        self.rows += rows
        if self.rows > self.max_rows:
            raise TartifletteError(
                f"The query's lists would return more than {self.max_rows} books together, "
                "the limit of this server; select fewer lists or page with booksConnection "
                "(books, with nothing beside it but book and __typename, returns the whole "
                "catalog).",
                extensions={"code": TOO_MANY_ROWS},
            )
