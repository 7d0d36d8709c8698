"""A merged document of the upstreams' own, kept and refreshed: what ``/openapi.json`` and
``/asyncapi.json`` serve (``gateway.docs.openapi``, ``gateway.docs.asyncapi``)."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from api_shared.errors import UnavailableError
from api_shared.http import HttpSession
from gateway.upstream.replicas import Upstream

logger = logging.getLogger(__name__)

CACHE_S = 30.0  # a complete merged document is fetched again after this long
RETRY_FIRST_S = 1.0  # after a failed merge; doubling after each failure, up to:
RETRY_MAX_S = 30.0
MAX_DOUBLINGS = 32
FETCH_TIMEOUT = aiohttp.ClientTimeout(total=3.0)


Merge = Callable[[dict[str, dict[str, Any]]], dict[str, Any]]
"""Upstream name → its document, into the one document the gateway serves."""


@dataclass(frozen=True, slots=True)
class MergedDocument:
    """A merged document as served: its JSON bytes, encoded once, and whether every
    upstream's part is in it."""

    body: bytes
    complete: bool


class DocsCache:
    """The merged document of the upstreams' documents at ``path``, kept as bytes, fetched
    over the gateway's own HTTP session.

    1. The first call fetches every upstream (concurrently) and merges; it, and any call
       arriving meanwhile, waits for that one merge. Every other call is answered at once
       from the bytes kept, and at most one refresh runs at a time, in the background.
    2. A complete document (every upstream answered) is fetched again by the first call
       ``ttl_s`` or more after it was merged, to follow the services' deployments.
    3. A failed refresh (an upstream down or answering nonsense, or the merge failing)
       changes nothing served: the last complete document stays. The next attempt waits
       ``retry_first_s``, doubling after each failure up to ``retry_max_s``, however many
       calls arrive meanwhile, so a down upstream is not asked again on every call.
    4. Until a first complete merge, what the upstreams that answered describe is served,
       marked incomplete (docs/api.md#operations); a merge that fails before anything was
       ever merged leaves nothing to serve: ``UnavailableError``, with Retry-After.
    """

    def __init__(
        self,
        http: HttpSession,
        upstreams: Mapping[str, Upstream],
        path: str,
        merge: Merge,
        *,
        ttl_s: float = CACHE_S,
        retry_first_s: float = RETRY_FIRST_S,
        retry_max_s: float = RETRY_MAX_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.http = http
        self.upstreams, self.path, self.merge = dict(upstreams), path, merge
        self.ttl_s, self.retry_first_s, self.retry_max_s = ttl_s, retry_first_s, retry_max_s
        self._clock = clock
        self._served: MergedDocument | None = None
        self._next_refresh = float("-inf")
        self._failures = 0
        self._refreshing: asyncio.Task[None] | None = None

    async def get(self) -> MergedDocument:
        """The document to serve now; starts a refresh when one is due."""
        if self._clock() >= self._next_refresh and not self.refreshing:
            self._refreshing = asyncio.create_task(
                self._refresh(), name=f"docs-refresh {self.path}"
            )
        if self._served is None and self._refreshing is not None:
            # Shielded: a caller that goes away does not cancel the merge others wait for.
            await asyncio.shield(self._refreshing)
        if self._served is None:
            raise UnavailableError(
                "The API documents could not be merged yet; try again shortly.",
                retry_after_s=max(1, math.ceil(self._next_refresh - self._clock())),
            )
        return self._served

    @property
    def refreshing(self) -> bool:
        return self._refreshing is not None and not self._refreshing.done()

    async def _refresh(self) -> None:
        """Fetch and merge once; never raises (it runs as a task nobody may await)."""
        try:
            session = self.http.session
            names = list(self.upstreams)
            fetched = await asyncio.gather(
                *(_fetch(session, self.upstreams[name], self.path) for name in names)
            )
            documents = {
                name: document
                for name, document in zip(names, fetched, strict=True)
                if document is not None
            }
            body = orjson.dumps(self.merge(documents))
        except Exception:
            logger.exception("could not merge the API documents", extra={"path": self.path})
            self._failed("the merge failed")
            return
        complete = len(documents) == len(self.upstreams)
        if complete or self._served is None or not self._served.complete:
            self._served = MergedDocument(body, complete)
        if complete:
            self._failures = 0
            self._next_refresh = self._clock() + self.ttl_s
        else:
            missing = ", ".join(sorted(set(self.upstreams) - set(documents)))
            self._failed(f"no document from {missing}")

    def _failed(self, reason: str) -> None:
        self._failures += 1
        # The exponent is capped: after a long outage 2**n would no longer fit a float.
        doublings = min(self._failures - 1, MAX_DOUBLINGS)
        delay = min(self.retry_first_s * 2**doublings, self.retry_max_s)
        self._next_refresh = self._clock() + delay
        logger.warning(
            "API documents not merged; what was served is kept",
            extra={
                "path": self.path,
                "reason": reason,
                "complete": self._served is not None and self._served.complete,
                "failures": self._failures,
                "retry_in_s": delay,
            },
        )


async def _fetch(
    session: aiohttp.ClientSession, upstream: Upstream, path: str
) -> dict[str, Any] | None:
    for target in upstream.candidates():
        try:
            async with session.get(f"{target.url}{path}", timeout=FETCH_TIMEOUT) as response:
                if response.status == 200:
                    document = await response.json()
                    if isinstance(document, dict):
                        return document
        except (aiohttp.ClientError, TimeoutError, ValueError) as error:
            logger.warning(
                "could not fetch API docs",
                extra={"upstream": upstream.name, "path": path, "error": repr(error)},
            )
    return None
