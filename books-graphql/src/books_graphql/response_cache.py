"""A micro-cache of successful GraphQL responses, for a public, read-mostly catalog.

Executing ``{ books { title author } }`` costs Tartiflette about 15 µs per field (and the
database a round trip), where a cached answer costs a dictionary lookup. The catalog only
changes through batch imports, so answering the same query the same way for up to ``ttl_s``
seconds (1 s by default, 0 turns it off) is a small, bounded staleness for a large gain; each
replica converges on its own, with nothing shared.

- Only executed queries without errors are stored: refusals, request errors and any error
  in a response are never replayed.
- The key is the query text, the operation name and the variables (canonical JSON).
- Memory is bounded by the stored bytes; the least recently used entries leave first, and
  a response above a quarter of the budget is not stored at all.
- One execution per key at a time: requests that miss while it runs wait for its answer
  instead of all executing the same query when an entry expires under load.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

CacheKey = tuple[str, str | None, bytes | None]

Execution = Callable[[], Awaitable[tuple[bytes, int, bool]]]
"""Runs the query: its body, its status, and whether it may be replayed."""


@dataclass(frozen=True, slots=True)
class _Entry:
    body: bytes
    size: int
    expires_at: float


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
        self._running: dict[CacheKey, asyncio.Future[bytes | None]] = {}

    async def fetch(self, key: CacheKey, execute: Execution) -> tuple[bytes, int]:
        """The stored answer (status 200), a running execution's, or ``execute``'s."""
        body = self.get(key)
        if body is not None:
            return body, 200
        running = self._running.get(key)
        if running is not None:
            shared = await asyncio.shield(running)
            if shared is not None:
                return shared, 200
            body, status, _ = await execute()  # that answer may not be replayed: run our own
            return body, status
        future: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
        self._running[key] = future
        try:
            body, status, replayable = await execute()
        except BaseException:
            future.set_result(None)
            raise
        finally:
            del self._running[key]
        if replayable:
            self.put(key, body)
        future.set_result(body if replayable else None)
        return body, status

    def get(self, key: CacheKey) -> bytes | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.expires_at <= self.clock():
            self._remove(key)
            return None
        self._entries.move_to_end(key)
        return entry.body

    def put(self, key: CacheKey, body: bytes) -> None:
        size = len(body) + len(key[0]) + len(key[2] or b"")
        if size > self.max_bytes // 4:
            return
        if key in self._entries:
            self._remove(key)
        self._entries[key] = _Entry(body, size, self.clock() + self.ttl_s)
        self.stored_bytes += size
        while self.stored_bytes > self.max_bytes:
            self._remove(next(iter(self._entries)))

    def __len__(self) -> int:
        return len(self._entries)

    def _remove(self, key: CacheKey) -> None:
        self.stored_bytes -= self._entries.pop(key).size
