"""Today's GraphQL clients through the gateway (#16): the real libraries, real processes.

graphql-js (npm, under node) reads the schema with every ``getIntrospectionQuery`` option,
alone and together, and ``buildClientSchema`` accepts each answer, which is the same schema
books-graphql gives directly; gql 4 with default settings fetches the schema and runs a
query. books-graphql/tests/integration/test_graphql_clients.py has the service's own side.
"""

from __future__ import annotations

import httpx
import pytest
from gql import Client, gql
from gql.transport.aiohttp import AIOHTTPTransport

from api_testkit.graphql_clients import INTROSPECTION_OPTIONS, graphql_js_introspection
from api_testkit.stack import Stack

OPTION_SETS = (*INTROSPECTION_OPTIONS, "all")


async def test_graphql_js_reads_the_schema_through_the_gateway_with_every_option(
    stack: Stack,
) -> None:
    through_gateway = await graphql_js_introspection(f"{stack.gateway_url}/graphql")
    direct = await graphql_js_introspection(f"{stack.services['books'].url}/graphql")

    for name in ("none", *OPTION_SETS):
        assert "errors" not in through_gateway[name], (name, through_gateway[name])
        assert (
            "booksConnection(first: Int = 20, after: String): BookConnection!"
            in (through_gateway[name]["sdl"])
        )
        assert through_gateway[name]["sdl"] == direct[name]["sdl"]
    assert {through_gateway[name]["sdl"] for name in OPTION_SETS} == {through_gateway["all"]["sdl"]}


@pytest.mark.smoke
async def test_gql_with_default_settings_works_through_the_gateway(stack: Stack) -> None:
    client = Client(
        transport=AIOHTTPTransport(url=f"{stack.gateway_url}/graphql"),
        fetch_schema_from_transport=True,
    )
    async with client as session:
        page = await session.execute(
            gql("{ booksConnection(first: 2) { totalCount edges { node { title } } } }")
        )
        books = await session.execute(gql("{ books { title } }"))

    assert page["booksConnection"]["totalCount"] == len(books["books"])
    assert [edge["node"] for edge in page["booksConnection"]["edges"]] == sorted(
        books["books"], key=lambda book: book["title"].encode()
    )[:2]
    assert client.schema is not None
    assert client.schema.get_type("BookConnection") is not None


async def test_the_gateway_documents_graphql_with_books_graphqls_own_description(
    stack: Stack,
) -> None:
    async with httpx.AsyncClient() as client:
        own = (await client.get(f"{stack.services['books'].url}/docs/openapi.json")).json()
        merged = (await client.get(f"{stack.gateway_url}/openapi.json")).json()

    for document in (own, merged):
        graphql = document["paths"]["/graphql"]
        assert (graphql["get"]["operationId"], graphql["post"]["operationId"]) == (
            "getGraphql",
            "postGraphql",
        )
        assert "GraphQLRequest" in document["components"]["schemas"]
    # The gateway adds what it may answer itself.
    assert "429" in merged["paths"]["/graphql"]["post"]["responses"]
    assert "429" not in own["paths"]["/graphql"]["post"]["responses"]
