"""GraphQL abuse through the gateway (docs/api.md#books-graphql: bounded work).

Hostile documents are refused before they are parsed, with a GraphQL error carrying the limit
(``{"errors": [...]}``: 200 for ``application/json``, 400 for
``application/graphql-response+json``); the service keeps answering and the next normal query
works. Floods are measured by counting answers, never by timing them.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
import pytest

from api_testkit.actors import Actors
from api_testkit.catalog import book_ids
from api_testkit.contract import assert_refused
from api_testkit.graphql_clients import NORMAL_QUERY, graphiql_introspection
from api_testkit.stack import Stack

pytestmark = pytest.mark.usefixtures("every_service_survives")

GRAPHQL_RESPONSE = "application/graphql-response+json"
INTROSPECTION = graphiql_introspection()


async def post_graphql(
    gateway: httpx.AsyncClient, query: str, media_type: str | None = None, **extra: Any
) -> httpx.Response:
    headers = {"accept": media_type} if media_type else {}
    return await gateway.post("/graphql", json={"query": query, **extra}, headers=headers)


def assert_graphql_refusal(response: httpx.Response, media_type: str | None, code: str) -> None:
    """A request error: ``errors`` with the code, no ``data``, the status the media type says."""
    expected_status = 400 if media_type == GRAPHQL_RESPONSE else 200
    assert response.status_code == expected_status, response.text[:300]
    assert response.headers["content-type"].startswith(media_type or "application/json")
    body = response.json()
    assert "data" not in body, body
    assert [error["extensions"]["code"] for error in body["errors"]] == [code], body


async def assert_still_serving(gateway: httpx.AsyncClient, stack: Stack) -> None:
    normal = await post_graphql(gateway, NORMAL_QUERY)
    assert normal.status_code == 200
    assert len(normal.json()["data"]["books"]) == len(await book_ids(gateway))
    async with httpx.AsyncClient() as client:
        assert (await client.get(f"{stack.services['books'].url}/ready")).status_code == 200


def aliases(count: int, selection: str = "__typename") -> str:
    return "{ " + " ".join(f"a{i}: {selection}" for i in range(count)) + " }"


def nested_fields(depth: int) -> str:
    # __schema { types { fields { type { ofType { ofType ... { name } } } } } }
    head = ["__schema", "types", "fields", "type"] + ["ofType"] * max(depth - 5, 0)
    return "{ " + " { ".join(head) + " { name" + " }" * (len(head) + 1)


DOCUMENTS: dict[str, tuple[str, str]] = {
    # name: (document, extensions.code)
    "900 aliases": (aliases(900), "QUERY_TOO_MANY_FIELDS"),
    "600 aliased lists of books": (aliases(600, "books { id }"), "QUERY_TOO_MANY_FIELDS"),
    "20 000 aliases": (aliases(20_000), "QUERY_TOO_LARGE"),
    "fields 20 deep": (nested_fields(20), "QUERY_TOO_DEEP"),
    "8 000 nested braces": ("{" * 8000 + "}" * 8000, "QUERY_TOO_DEEP"),
    "8 000 nested lists in an argument": (
        "{ book(id: " + "[" * 7990 + "]" * 7990 + ") { id } }",
        "QUERY_TOO_DEEP",
    ),
    "3 000 nested objects in an argument": (
        "{ book(id: " + "{a: " * 3000 + "1" + "}" * 3000 + ") { id } }",
        "QUERY_TOO_DEEP",
    ),
    "1 000 nested inline fragments": (
        "{ books { " + "... on Book { " * 1000 + "id" + " }" * 1000 + " } }",
        "QUERY_TOO_DEEP",
    ),
    "nested lists in a variable default": (
        "query($id: ID = " + "[" * 5000 + "]" * 5000 + ") { book(id: $id) { id } }",
        "QUERY_TOO_DEEP",
    ),
    "one byte above BOOKS_MAX_QUERY_BYTES": (
        NORMAL_QUERY + " " * (16_385 - len(NORMAL_QUERY)),
        "QUERY_TOO_LARGE",
    ),
    "a comment of 20 000 bytes": ("#" + "x" * 20_000 + "\n" + NORMAL_QUERY, "QUERY_TOO_LARGE"),
    "fragments spread 2^30 times": (
        "{ books { ...F0 } } "
        + " ".join(f"fragment F{i} on Book {{ ...F{i + 1} ...F{i + 1} }}" for i in range(30))
        + " fragment F30 on Book { id }",
        "QUERY_TOO_MANY_FIELDS",
    ),
    "a fragment cycle": (
        "{ books { ...A } } fragment A on Book { id ...B } fragment B on Book { ...A }",
        "GRAPHQL_VALIDATION_FAILED",
    ),
    "a fragment spreading itself": (
        "{ books { ...A } } fragment A on Book { id ...A }",
        "GRAPHQL_VALIDATION_FAILED",
    ),
    "a NUL after a valid query": (NORMAL_QUERY + "\x00 } } } not graphql", "GRAPHQL_PARSE_FAILED"),
    "a NUL inside a string": ('{ book(id: "a\x00b") { id } }', "GRAPHQL_PARSE_FAILED"),
    "two operations, one name": (
        "query A { books { id } } query A { books { title } }",
        "GRAPHQL_VALIDATION_FAILED",
    ),
}


@pytest.mark.parametrize("media_type", [None, GRAPHQL_RESPONSE], ids=["json", "graphql-response"])
@pytest.mark.parametrize("document", DOCUMENTS.values(), ids=DOCUMENTS.keys())
async def test_a_hostile_document_is_refused_with_a_graphql_error_and_the_next_query_works(
    gateway: httpx.AsyncClient, stack: Stack, document: tuple[str, str], media_type: str | None
) -> None:
    query, code = document

    response = await post_graphql(gateway, query, media_type)

    assert_graphql_refusal(response, media_type, code)
    await assert_still_serving(gateway, stack)


async def test_a_document_above_the_gateway_body_limit_is_413_before_books_sees_it(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    async with httpx.AsyncClient() as client:
        before = await _graphql_requests_seen(client, stack)
    response = await post_graphql(gateway, aliases(120_000))  # about 1.8 MB

    assert_refused(response, 413, "PAYLOAD_TOO_LARGE")
    async with httpx.AsyncClient() as client:
        assert await _graphql_requests_seen(client, stack) == before
    await assert_still_serving(gateway, stack)


async def _graphql_requests_seen(client: httpx.AsyncClient, stack: Stack) -> float:
    """books-graphql's own count of POST /graphql requests (from its /metrics)."""
    metrics = (await client.get(f"{stack.services['books'].url}/metrics")).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("http_requests_total{") and 'method="POST"' in line
    )


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b'[{"query": "{ books { id } }"}, {"query": "{ books { id } }"}]', "MALFORMED_JSON"),
        (b"[]", "MALFORMED_JSON"),
        (b'{"query": ["{ books { id } }", "{ books { id } }"]}', "VALIDATION_FAILED"),
        (b'{"query": 42}', "VALIDATION_FAILED"),
        (b'{"query": "{ books { id } }", "variables": [1, 2]}', "VALIDATION_FAILED"),
        (b'{"query": "{ books { id } }", "operationName": ["a"]}', "VALIDATION_FAILED"),
        (
            b'{"query": "query($id: ID!) { book(id: $id) { id } }", "variables": {"id": 1e400}}',
            "MALFORMED_JSON",
        ),
    ],
    ids=[
        "batch",
        "empty-batch",
        "query-list",
        "query-number",
        "variables-list",
        "name-list",
        "giant-variable",
    ],
)
async def test_batches_and_malformed_parameters_are_a_clear_400(
    gateway: httpx.AsyncClient, stack: Stack, body: bytes, code: str
) -> None:
    # Batching is not supported: an array body is not a GraphQL request.
    response = await gateway.post(
        "/graphql", content=body, headers={"content-type": "application/json"}
    )

    assert_refused(response, 400, code)
    await assert_still_serving(gateway, stack)


async def test_hostile_values_in_arguments_and_variables_find_nothing(
    gateway: httpx.AsyncClient,
) -> None:
    hostile = ["' OR 1=1 --", "a\x00b", "../../etc/passwd", "x" * 10_000, "%00", "😀" * 100]
    for value in hostile:
        response = await post_graphql(
            gateway, "query($id: ID!) { book(id: $id) { id } }", variables={"id": value}
        )
        assert response.json() == {"data": {"book": None}}, value


async def test_an_introspection_flood_does_not_degrade_the_other_routes(
    gateway: httpx.AsyncClient, stack: Stack, actors: Actors
) -> None:
    # 240 different introspection documents (a comment defeats both caches), 12 at a time,
    # while a customer reads orders and the catalog: every one of those must still be a 200.
    flood_size, concurrency = 240, 12
    gate = asyncio.Semaphore(concurrency)
    flood: Counter[int] = Counter()
    others: Counter[tuple[str, int]] = Counter()

    async def introspect(number: int) -> None:
        async with gate:
            response = await post_graphql(gateway, f"{INTROSPECTION}\n# flood {number}")
            flood[response.status_code] += 1
            assert "__schema" in response.json()["data"]

    async def other_routes() -> None:
        for _ in range(20):
            for route, request in (
                ("orders", gateway.get("/orders", headers=actors.headers)),
                ("me", gateway.get(f"/api/users/{actors.me['id']}", headers=actors.headers)),
                ("books", post_graphql(gateway, NORMAL_QUERY)),
                ("jwks", gateway.get("/.well-known/jwks.json")),
            ):
                others[(route, (await request).status_code)] += 1

    await asyncio.gather(other_routes(), *(introspect(n) for n in range(flood_size)))

    assert flood == Counter({200: flood_size})
    assert others == Counter({(route, 200): 20 for route in ("orders", "me", "books", "jwks")})
    await assert_still_serving(gateway, stack)
