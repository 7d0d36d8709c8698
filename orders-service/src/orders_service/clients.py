"""HTTP clients (aiohttp) for the upstreams of ``orders_service.upstreams``.

One ``aiohttp.ClientSession`` per process, opened when the server starts and closed when it
stops; every call has a short total timeout, so a slow upstream costs a request at most that.
Every call carries the ``X-Request-ID`` of the request it is made for (and, with tracing on,
its ``traceparent``: api_shared.tracing instruments the session).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Collection, Sequence
from typing import Any
from uuid import UUID

import aiohttp
import orjson

from api_shared.errors import ForbiddenError, UnauthenticatedError, UnavailableError
from api_shared.request_id import forwarded_headers

logger = logging.getLogger(__name__)

CATALOG = "books-graphql"
USERS = "users-service"

# Unreachable (refused, DNS, reset), too slow, or not JSON.
_FAILURES: tuple[type[BaseException], ...] = (aiohttp.ClientError, TimeoutError, ValueError)


class HttpSession:
    """The process's one aiohttp session, a resource: started with the server, stopped with it."""

    def __init__(self, *, timeout_s: float) -> None:
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self.timeout)

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("the HTTP session is not open (is the server started?)")
        return self._session


class BooksGraphqlCatalog:
    """Asks books-graphql about every book of an order in one query, one alias per id."""

    def __init__(self, http: HttpSession, url: str) -> None:
        self.http = http
        self.url = url

    async def unknown(self, book_ids: Collection[str]) -> set[str]:
        ids = list(dict.fromkeys(book_ids))
        if not ids:
            return set()
        variables = {f"b{index}": book_id for index, book_id in enumerate(ids)}
        try:
            async with self.http.session.post(
                self.url,
                json={"query": books_query(list(variables)), "variables": variables},
                headers={
                    "Accept": "application/graphql-response+json, application/json;q=0.9",
                    **forwarded_headers(),
                },
            ) as response:
                if response.status != 200:
                    raise _unavailable(CATALOG, f"status {response.status}")
                payload = await response.json(content_type=None, loads=orjson.loads)
        except _FAILURES as error:
            raise _unavailable(CATALOG, repr(error)) from error
        return _unknown_books(payload, variables)


def books_query(aliases: list[str]) -> str:
    """``query OrderBooks($b0: ID!) { b0: book(id: $b0) { id } }``, for every alias."""
    parameters = ", ".join(f"${alias}: ID!" for alias in aliases)
    selections = " ".join(f"{alias}: book(id: ${alias}) {{ id }}" for alias in aliases)
    return f"query OrderBooks({parameters}) {{ {selections} }}"


def _unknown_books(payload: Any, variables: dict[str, str]) -> set[str]:
    # A null book is "not in the catalog" only when the query ran cleanly: with errors, a
    # null may be a failed resolver, and calling that book unknown would be a lie.
    if not isinstance(payload, dict) or payload.get("errors"):
        raise _unavailable(CATALOG, "errors or no object")
    data = payload.get("data")
    if not isinstance(data, dict):
        raise _unavailable(CATALOG, "no data")
    unknown: set[str] = set()
    for alias, book_id in variables.items():
        if alias not in data:
            raise _unavailable(CATALOG, f"no answer for {alias}")
        book = data[alias]
        if book is None:
            unknown.add(book_id)
        elif not isinstance(book, dict):
            raise _unavailable(CATALOG, f"unusable answer for {alias}")
    return unknown


class UsersServiceDirectory:
    """Asks users-service ``GET /api/users/{id}`` with the caller's token.

    Several replicas are taken in turn; one that refuses the connection (so never saw the
    request) is skipped for the next.
    """

    def __init__(self, http: HttpSession, base_urls: Sequence[str]) -> None:
        if not base_urls:
            raise ValueError("at least one users-service URL is needed")
        self.http = http
        self.base_urls = [url.rstrip("/") for url in base_urls]
        self._turn = itertools.count()

    async def exists(self, user_id: UUID, *, authorization: str) -> bool:
        first = next(self._turn)
        for attempt in range(len(self.base_urls)):
            base_url = self.base_urls[(first + attempt) % len(self.base_urls)]
            try:
                status = await self._status(f"{base_url}/api/users/{user_id}", authorization)
            except aiohttp.ClientConnectorError as error:
                logger.warning("users-service replica refused", extra={"error": repr(error)})
                continue
            if status == 200:
                return True
            if status == 404:
                return False
            if status == 401:
                # The token is valid here, but users-service, which knows sessions, refused
                # it: its session has ended (logout, revocation). The caller must log in.
                raise UnauthenticatedError(
                    "This token's session has ended; log in again.", token_sent=True
                )
            if status == 403:
                raise ForbiddenError("users-service refused this account (suspended).")
            raise _unavailable(USERS, f"status {status}")
        raise _unavailable(USERS, "every replica refused the connection")

    async def _status(self, url: str, authorization: str) -> int:
        headers = {
            "Authorization": authorization,
            "Accept": "application/json",
            **forwarded_headers(),
        }
        try:
            async with self.http.session.get(url, headers=headers) as response:
                return response.status
        except aiohttp.ClientConnectorError:
            raise
        except _FAILURES as error:
            raise _unavailable(USERS, repr(error)) from error


_MESSAGES = {
    CATALOG: "The book catalog is unavailable; try again shortly.",
    USERS: "The user directory is unavailable; try again shortly.",
}


def _unavailable(upstream: str, reason: str) -> UnavailableError:
    logger.warning("upstream unavailable", extra={"upstream": upstream, "reason": reason})
    return UnavailableError(_MESSAGES[upstream])
