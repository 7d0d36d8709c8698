"""HTTP clients for the other services orders-service asks (``BookCatalog`` and
``UserDirectory`` of ``orders_service.ports``), on the process's one session
(``api_shared.http``)."""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any
from uuid import UUID

import orjson

from api_shared.errors import UnavailableError
from api_shared.http import FAILURES, HttpSession, Replicas
from api_shared.request_id import forwarded_headers
from api_shared.standing import refuse_as_users_service_did

logger = logging.getLogger(__name__)

CATALOG = "books-graphql"


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
                    raise _unavailable(f"status {response.status}")
                payload = await response.json(content_type=None, loads=orjson.loads)
        except FAILURES as error:
            raise _unavailable(repr(error)) from error
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
        raise _unavailable("errors or no object")
    data = payload.get("data")
    if not isinstance(data, dict):
        raise _unavailable("no data")
    unknown: set[str] = set()
    for alias, book_id in variables.items():
        if alias not in data:
            raise _unavailable(f"no answer for {alias}")
        book = data[alias]
        if book is None:
            unknown.add(book_id)
        elif not isinstance(book, dict):
            raise _unavailable(f"unusable answer for {alias}")
    return unknown


class UsersServiceDirectory:
    """Asks users-service ``GET /api/users/{id}`` with the caller's token (``Replicas``: a
    replica that refuses the connection is skipped for the next)."""

    def __init__(self, users: Replicas) -> None:
        self.users = users

    async def exists(self, user_id: UUID, *, authorization: str) -> bool:
        answer = await self.users.get(f"/api/users/{user_id}", {"Authorization": authorization})
        if answer.status == 200:
            return True
        if answer.status == 404:
            return False
        # The token is valid here, but users-service, which knows sessions, may refuse it.
        refuse_as_users_service_did(answer.status)
        raise self.users.unavailable(f"status {answer.status}")


def _unavailable(reason: str) -> UnavailableError:
    logger.warning("upstream unavailable", extra={"upstream": CATALOG, "reason": reason})
    return UnavailableError("The book catalog is unavailable; try again shortly.")
