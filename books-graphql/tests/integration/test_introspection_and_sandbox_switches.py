"""Introspection and the GraphiQL sandbox, off by default in production (APP_ENV).

Each server here is a real HTTP server in this process over the suite's seeded database (the
session's server, ``base_url``, owns the ORM connection the repository reads through). The
development defaults (both on) are what the rest of the suite runs with.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx
import pytest

from api_testkit.in_process import serve_in_process
from books_graphql.app import create_app
from books_graphql.context import wire
from books_graphql.http.protocol import GRAPHQL_RESPONSE_JSON
from books_graphql.introspection_switch import MESSAGE
from books_graphql.repository import BookRepository
from books_graphql.settings import Settings

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
Serve = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def serve(base_url: str) -> Serve:
    """``async with serve(**settings) as client``: a books-graphql with those settings."""

    @asynccontextmanager
    async def served(**values: Any) -> AsyncIterator[httpx.AsyncClient]:
        settings = Settings(seed_file=None, **values)
        app = create_app(settings, context=wire(settings, repository=BookRepository()))
        async with serve_in_process(app) as url, httpx.AsyncClient(base_url=url) as client:
            yield client

    return served


@pytest.fixture
async def production(serve: Serve) -> AsyncIterator[httpx.AsyncClient]:
    async with serve(environment="production") as client:
        yield client


def refused_for_introspection(body: dict[str, Any]) -> bool:
    return "data" not in body and [
        (error["message"], error["extensions"]) for error in body["errors"]
    ] == [(MESSAGE, {"code": "GRAPHQL_VALIDATION_FAILED"})]


async def test_in_production_graphiqls_introspection_query_is_a_request_error(
    production: httpx.AsyncClient, introspection_query: str
) -> None:
    legacy = await production.post("/graphql", json={"query": introspection_query})
    current = await production.post(
        "/graphql", json={"query": introspection_query}, headers={"accept": GRAPHQL_RESPONSE_JSON}
    )

    assert legacy.status_code == 200  # application/json: request errors are 200
    assert refused_for_introspection(legacy.json())
    assert current.status_code == 400  # application/graphql-response+json: 400
    assert current.headers["content-type"].startswith(GRAPHQL_RESPONSE_JSON)
    assert refused_for_introspection(current.json())


@pytest.mark.parametrize(
    "query",
    [
        '{ __type(name: "Book") { fields { name } } }',
        "{ books { title } __schema { queryType { name } } }",
        "query { ...Schema } fragment Schema on Query { __schema { types { name } } }",
        "{ ... on Query { alias: __schema { types { name } } } }",
    ],
    ids=["__type", "beside a field", "in a fragment", "aliased in an inline fragment"],
)
async def test_in_production_introspection_is_refused_wherever_it_hides(
    production: httpx.AsyncClient, query: str
) -> None:
    response = await production.post("/graphql", json={"query": query})

    body = response.json()
    assert refused_for_introspection(body)
    assert body["errors"][0]["locations"]  # points at the introspecting field


async def test_in_production_queries_and_typename_are_answered(
    production: httpx.AsyncClient,
) -> None:
    response = await production.post(
        "/graphql", json={"query": "{ __typename books { __typename title } }"}
    )

    body = response.json()
    assert "errors" not in body
    assert body["data"]["__typename"] == "Query"
    assert {"__typename": "Book", "title": "City of Glass"} in body["data"]["books"]


@pytest.mark.parametrize("path", ["/", "/graphql"])
async def test_in_production_a_browser_gets_the_json_answer_not_the_sandbox(
    production: httpx.AsyncClient, path: str
) -> None:
    response = await production.get(path, headers={"accept": BROWSER_ACCEPT})

    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["error"]["code"] == "VALIDATION_FAILED"
    assert "<html" not in response.text


async def test_each_can_be_switched_on_in_production_and_off_in_development(
    serve: Serve, introspection_query: str
) -> None:
    async with serve(environment="production", introspection=True, graphiql=True) as on:
        introspected = (await on.post("/graphql", json={"query": introspection_query})).json()
        page = await on.get("/", headers={"accept": BROWSER_ACCEPT})
    async with serve(environment="development", introspection=False, graphiql=False) as off:
        refused = (await off.post("/graphql", json={"query": introspection_query})).json()
        no_page = await off.get("/", headers={"accept": BROWSER_ACCEPT})

    assert introspected["data"]["__schema"]["queryType"]["name"] == "Query"
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert refused_for_introspection(refused)
    assert no_page.headers["content-type"].startswith("application/json")
