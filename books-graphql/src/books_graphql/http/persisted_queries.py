"""Automatic persisted queries, in Apollo's protocol (what Apollo Client's link speaks).

A client sends ``extensions.persistedQuery = {version: 1, sha256Hash}`` without the query;
a replica that knows the hash runs the query it stands for, one that does not answers
``PersistedQueryNotFound`` (code ``PERSISTED_QUERY_NOT_FOUND``, status 200, as Apollo
Server does: the client's link retries with the query and the hash, and only then
registers it). Short GET URLs follow, which HTTP caches can keep (http.cache_headers).

- The hash must be the SHA-256 of the query sent with it (else 400, BAD_REQUEST); version
  1 is the only one (else 400).
- A query is registered only once it parsed and validated (answering calls ``register``),
  so the store never holds what no one could run; it is a bounded LRU per replica
  (``BOOKS_PERSISTED_QUERIES`` entries, 0 turns the protocol off, answered
  ``PersistedQueryNotSupported`` like a server without it).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

PROTOCOL_VERSION = 1


@dataclass(frozen=True, slots=True)
class PersistedQuery:
    """The query to run, and the hash to register it under (None: nothing to register)."""

    query: str
    register_as: str | None


@dataclass(frozen=True, slots=True)
class Refusal:
    """A GraphQL error response for a persisted-query request that cannot run."""

    message: str
    code: str
    status: int

    def body(self) -> bytes:
        return orjson.dumps(
            {"errors": [{"message": self.message, "extensions": {"code": self.code}}]}
        )


NOT_FOUND = Refusal("PersistedQueryNotFound", "PERSISTED_QUERY_NOT_FOUND", 200)
NOT_SUPPORTED = Refusal("PersistedQueryNotSupported", "PERSISTED_QUERY_NOT_SUPPORTED", 200)
HASH_MISMATCH = Refusal("provided sha does not match query", "BAD_REQUEST", 400)
BAD_VERSION = Refusal("Unsupported persisted query version", "BAD_REQUEST", 400)
BAD_EXTENSION = Refusal(
    "extensions.persistedQuery must be {version: 1, sha256Hash: <64 hex digits>}",
    "BAD_REQUEST",
    400,
)


class PersistedQueries:
    """The queries this replica knows by hash."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._queries: OrderedDict[str, str] = OrderedDict()

    def resolve(
        self, query: str | None, extensions: Mapping[str, Any] | None
    ) -> PersistedQuery | Refusal | None:
        """The query a request stands for; None when it uses no persisted query."""
        if not extensions or "persistedQuery" not in extensions:
            return None
        if self.max_entries == 0:
            return NOT_SUPPORTED
        persisted = extensions["persistedQuery"]
        if not isinstance(persisted, dict):
            return BAD_EXTENSION
        if persisted.get("version") != PROTOCOL_VERSION:
            return BAD_VERSION
        digest = persisted.get("sha256Hash")
        if not isinstance(digest, str) or len(digest) != 64:
            return BAD_EXTENSION
        digest = digest.lower()
        if query is not None:
            if hashlib.sha256(query.encode()).hexdigest() != digest:
                return HASH_MISMATCH
            return PersistedQuery(query, register_as=digest)
        known = self._queries.get(digest)
        if known is None:
            return NOT_FOUND
        self._queries.move_to_end(digest)
        return PersistedQuery(known, register_as=None)

    def register(self, digest: str, query: str) -> None:
        self._queries[digest] = query
        self._queries.move_to_end(digest)
        while len(self._queries) > self.max_entries:
            self._queries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._queries)
