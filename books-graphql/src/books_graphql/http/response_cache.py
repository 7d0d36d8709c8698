"""A cache of successful GraphQL responses, for a public, read-mostly catalog.

Executing a query costs far more than a dictionary lookup, and the catalog only changes
through imports. Each answer is stored with the catalog version it was computed from
(catalog_version) and replayed only while that version is current: answering reads the
version (at most every ``BOOKS_CATALOG_CHECK_MS``) before looking here, so once an import
has finished, no replica replays an answer from before it. ``ttl_s`` (60 s by default, 0
turns the cache off) is only a safety net for changes made behind the service's back.

- Only executed queries without errors are stored: refusals, request errors and any error
  in a response are never replayed.
- The key is the query text, the operation name and the variables (canonical JSON).
- Memory is bounded by the stored bytes; the least recently used entries leave first, and
  a response above a quarter of the budget is not stored at all.
- One execution per key and version at a time: requests that miss while it runs wait for
  its answer instead of all executing the same query when an entry expires under load.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from books_graphql.http.answer import Answer, Caching

CacheKey = tuple[str, str | None, bytes | None]

Execution = Callable[[], Awaitable[Answer]]
"""Runs the query; only a ``Caching.REPLAYABLE`` answer is stored and shared."""


@dataclass(frozen=True, slots=True)
class _Entry:
    answer: Answer
    size: int
    expires_at: float
    version: int


def cache_key(query: str, operation_name: str | None, variables: dict[str, Any] | None) -> CacheKey:
    canonical = orjson.dumps(variables, option=orjson.OPT_SORT_KEYS) if variables else None
    return query, operation_name, canonical


class ResponseCache:
    def __init__(
        self, *, ttl_s: float, max_bytes: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl_s = ttl_s
        self.max_bytes = max_bytes
        self.clock = clock
        self.stored_bytes = 0
        self._entries: OrderedDict[CacheKey, _Entry] = OrderedDict()
        self._running: dict[tuple[CacheKey, int], asyncio.Future[Answer | None]] = {}

    async def fetch(self, key: CacheKey, execute: Execution, *, version: int = 0) -> Answer:
        """The stored answer, a running execution's, or ``execute``'s.

        ``version`` is the catalog version ``execute`` answers from.
        """
        stored = self.get(key, version)
        if stored is not None:
            return stored
        running = self._running.get((key, version))
        if running is not None:
            shared = await asyncio.shield(running)
            if shared is not None:
                return shared
            return await execute()  # that answer may not be replayed: run our own
        future: asyncio.Future[Answer | None] = asyncio.get_running_loop().create_future()
        self._running[(key, version)] = future
        try:
            answer = await execute()
        except BaseException:
            future.set_result(None)
            raise
        finally:
            del self._running[(key, version)]
        replayable = answer.caching is Caching.REPLAYABLE
        if replayable:
            self.put(key, answer, version)
        future.set_result(answer if replayable else None)
        return answer

    def get(self, key: CacheKey, version: int = 0) -> Answer | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.version != version or entry.expires_at <= self.clock():
            self._remove(key)
            return None
        self._entries.move_to_end(key)
        return entry.answer

    def put(self, key: CacheKey, answer: Answer, version: int = 0) -> None:
        """Keep a replayable ``answer`` (the caller's to check) of catalog ``version``."""
        size = len(answer.body) + len(key[0]) + len(key[2] or b"")
        if size > self.max_bytes // 4:
            return
        if key in self._entries:
            self._remove(key)
        self._entries[key] = _Entry(answer, size, self.clock() + self.ttl_s, version)
        self.stored_bytes += size
        while self.stored_bytes > self.max_bytes:
            self._remove(next(iter(self._entries)))

    def clear(self) -> None:
        """Forget every answer (the catalog changed: they can never be replayed)."""
        self._entries.clear()
        self.stored_bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def _remove(self, key: CacheKey) -> None:
        self.stored_bytes -= self._entries.pop(key).size
