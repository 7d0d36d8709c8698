"""The real aiohttp clients against tiny aiohttp servers: found, unknown, slow, down, garbage."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import pytest
from aiohttp import web

from api_shared.errors import ForbiddenError, UnauthenticatedError, UnavailableError
from api_shared.http import HttpSession, Replicas
from api_shared.request_id import current_request_id
from api_shared.standing import USERS_UNAVAILABLE
from api_testkit.aiohttp_servers import serving
from api_testkit.http_sessions import open_session
from api_testkit.ports import free_port
from orders_service.clients import BooksGraphqlCatalog, UsersServiceDirectory, books_query

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def directory_of(http: HttpSession, urls: list[str]) -> UsersServiceDirectory:
    return UsersServiceDirectory(
        Replicas(http, urls, name="users-service", message=USERS_UNAVAILABLE)
    )


CATALOG = {"book-1", "book-2"}


class Upstream:
    """An aiohttp server whose one handler a test chooses; it records what it was sent."""

    def __init__(self) -> None:
        self.handler: Handler = self.graphql
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        self.url = ""
        self.release = asyncio.Event()

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        body = await request.json() if request.can_read_body else None
        self.requests.append((request.path, dict(request.headers), body))
        return await self.handler(request)

    async def graphql(self, request: web.Request) -> web.StreamResponse:
        """A books-graphql that answers the aliased ``book(id:)`` query from CATALOG."""
        variables = self.requests[-1][2]["variables"]
        data = {
            alias: {"id": book_id} if book_id in CATALOG else None
            for alias, book_id in variables.items()
        }
        return web.json_response({"data": data})

    async def user(self, request: web.Request) -> web.StreamResponse:
        """A users-service knowing one user."""
        if request.path == f"/api/users/{KNOWN_USER}":
            return web.json_response({"data": {"id": str(KNOWN_USER)}})
        return web.json_response({"error": {"code": "NOT_FOUND"}}, status=404)

    async def stall(self, request: web.Request) -> web.StreamResponse:
        await self.release.wait()  # released when the test ends
        return web.json_response({})


KNOWN_USER = uuid.uuid4()


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    upstream = Upstream()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", upstream.dispatch)
    async with serving(app) as upstream.url:
        try:
            yield upstream
        finally:
            upstream.release.set()  # stalled handlers end before the server does


@pytest.fixture
async def http() -> AsyncIterator[HttpSession]:
    async with open_session(timeout_s=0.5) as session:
        yield session


def test_the_books_query_asks_for_every_id_under_its_own_alias() -> None:
    head = "query OrderBooks($b0: ID!, $b1: ID!)"
    body = "{ b0: book(id: $b0) { id } b1: book(id: $b1) { id } }"

    assert books_query(["b0", "b1"]) == f"{head} {body}"


async def test_the_catalog_reports_the_books_it_does_not_have_in_one_request(
    upstream: Upstream, http: HttpSession
) -> None:
    catalog = BooksGraphqlCatalog(http, f"{upstream.url}/graphql")

    unknown = await catalog.unknown(["book-1", "nope", "book-2", "nope"])

    assert unknown == {"nope"}
    assert len(upstream.requests) == 1
    path, headers, body = upstream.requests[0]
    assert path == "/graphql"
    assert headers["Content-Type"].startswith("application/json")
    assert body["variables"] == {"b0": "book-1", "b1": "nope", "b2": "book-2"}
    assert body["query"] == books_query(["b0", "b1", "b2"])


async def test_the_catalog_finds_every_known_book_and_skips_the_call_for_no_books(
    upstream: Upstream, http: HttpSession
) -> None:
    catalog = BooksGraphqlCatalog(http, f"{upstream.url}/graphql")

    assert await catalog.unknown(["book-1", "book-2"]) == set()
    assert await catalog.unknown([]) == set()
    assert len(upstream.requests) == 1


async def test_a_catalog_that_does_not_answer_in_time_is_unavailable(
    upstream: Upstream, http: HttpSession
) -> None:
    upstream.handler = upstream.stall
    catalog = BooksGraphqlCatalog(http, f"{upstream.url}/graphql")

    with pytest.raises(UnavailableError):
        await catalog.unknown(["book-1"])


async def test_a_catalog_refusing_connections_is_unavailable(http: HttpSession) -> None:
    catalog = BooksGraphqlCatalog(http, f"http://127.0.0.1:{free_port()}/graphql")

    with pytest.raises(UnavailableError) as caught:
        await catalog.unknown(["book-1"])

    assert caught.value.headers["Retry-After"] == "1"


def _answer(status: int, body: bytes) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, body=body, content_type="application/json")

    return handler


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (200, b"<html>not json</html>"),
        (200, b"[1, 2]"),
        (200, b'{"data": null}'),
        (200, b'{"data": {}}'),
        (200, b'{"data": {"b0": "book-1"}}'),
        (200, orjson.dumps({"data": {"b0": None}, "errors": [{"message": "resolver failed"}]})),
        (400, orjson.dumps({"errors": [{"message": "too complex"}]})),
        (500, b'{"data": {"b0": null}}'),
    ],
)
async def test_a_catalog_answering_garbage_is_unavailable_never_unknown_book(
    upstream: Upstream, http: HttpSession, status: int, body: bytes
) -> None:
    upstream.handler = _answer(status, body)
    catalog = BooksGraphqlCatalog(http, f"{upstream.url}/graphql")

    with pytest.raises(UnavailableError):
        await catalog.unknown(["book-1"])


async def test_the_directory_finds_a_user_with_the_callers_token(
    upstream: Upstream, http: HttpSession
) -> None:
    upstream.handler = upstream.user
    directory = directory_of(http, [f"{upstream.url}/"])

    found = await directory.exists(KNOWN_USER, authorization="Bearer abc")
    missing = await directory.exists(uuid.uuid4(), authorization="Bearer abc")

    assert found is True
    assert missing is False
    path, headers, _ = upstream.requests[0]
    assert path == f"/api/users/{KNOWN_USER}"
    assert headers["Authorization"] == "Bearer abc"


@pytest.mark.parametrize(("status", "error"), [(401, UnauthenticatedError), (403, ForbiddenError)])
async def test_the_directory_refusing_the_caller_is_passed_on_to_the_caller(
    upstream: Upstream, http: HttpSession, status: int, error: type[Exception]
) -> None:
    # users-service knows sessions and suspensions: a token valid here may be refused there.
    upstream.handler = _answer(status, b"{}")
    directory = directory_of(http, [upstream.url])

    with pytest.raises(error):
        await directory.exists(KNOWN_USER, authorization="Bearer abc")


@pytest.mark.parametrize("status", [400, 500, 503])
async def test_the_directory_answering_anything_else_is_unavailable(
    upstream: Upstream, http: HttpSession, status: int
) -> None:
    upstream.handler = _answer(status, b"{}")
    directory = directory_of(http, [upstream.url])

    with pytest.raises(UnavailableError):
        await directory.exists(KNOWN_USER, authorization="Bearer abc")


async def test_a_directory_that_is_slow_or_refuses_connections_is_unavailable(
    upstream: Upstream, http: HttpSession
) -> None:
    upstream.handler = upstream.stall
    slow = directory_of(http, [upstream.url])
    down = directory_of(http, [f"http://127.0.0.1:{free_port()}"])

    for directory in (slow, down):
        with pytest.raises(UnavailableError):
            await directory.exists(KNOWN_USER, authorization="Bearer abc")


async def test_a_client_used_before_the_server_started_fails_loudly() -> None:
    catalog = BooksGraphqlCatalog(HttpSession(timeout_s=1), "http://127.0.0.1:1/graphql")

    with pytest.raises(RuntimeError, match="not open"):
        await catalog.unknown(["book-1"])


async def test_the_directory_skips_a_replica_that_refuses_and_takes_replicas_in_turn(
    upstream: Upstream, http: HttpSession
) -> None:
    upstream.handler = upstream.user
    directory = directory_of(http, [f"http://127.0.0.1:{free_port()}", upstream.url])

    answers = [await directory.exists(KNOWN_USER, authorization="Bearer abc") for _ in range(3)]

    assert answers == [True, True, True]
    assert len(upstream.requests) == 3  # every call reached the live replica, one way or another


async def test_both_clients_forward_the_request_id_of_the_request_they_serve(
    upstream: Upstream, http: HttpSession
) -> None:
    catalog = BooksGraphqlCatalog(http, f"{upstream.url}/graphql")
    users = directory_of(http, [upstream.url])

    async def serve_request() -> None:
        # As install_request_ids does for the request being handled (in its own context).
        current_request_id.set("req-77")
        await catalog.unknown(["book-1"])
        upstream.handler = upstream.user
        await users.exists(KNOWN_USER, authorization="Bearer t")

    await asyncio.create_task(serve_request())

    assert [headers.get("X-Request-ID") for _, headers, _ in upstream.requests] == [
        "req-77",
        "req-77",
    ]
