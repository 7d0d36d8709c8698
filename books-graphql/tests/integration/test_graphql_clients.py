"""Today's GraphQL clients read the schema and run queries (#16): the real libraries.

- graphql-js (npm, run with node): ``getIntrospectionQuery`` with each of its options alone,
  none and all together, each answer accepted by ``buildClientSchema``;
- graphql-core: ``build_client_schema`` of the answer to its fullest introspection query;
- gql 4 with default settings: ``fetch_schema_from_transport=True`` (its introspection asks
  for ``inputValueDeprecation``), then queries validated against that schema.

api_testkit.graphql_clients runs graphql-js (installed once into a git-ignored cache); a
missing node or npm fails the test. The gateway's side of the same checks is in
tests/e2e/test_graphql_clients.py.
"""

from __future__ import annotations

from typing import Any

import graphql
import httpx
from gql import Client, GraphQLRequest, gql
from gql.transport.aiohttp import AIOHTTPTransport

from api_testkit.graphql_clients import (
    GRAPHQL_JS,
    INTROSPECTION_OPTIONS,
    graphql_js_introspection,
)

CATALOG_SDL = ("books: [Book!]!", "book(id: ID!): Book", "type Book {")


def assert_every_option_is_answered(report: dict[str, Any]) -> None:
    assert report["graphqlVersion"] == GRAPHQL_JS.rpartition("@")[2]
    for name in ("none", *INTROSPECTION_OPTIONS, "all"):
        assert "errors" not in report[name], (name, report[name])
        assert report[name]["status"] == 200
        assert all(part in report[name]["sdl"] for part in CATALOG_SDL), report[name]["sdl"]
        assert {"skip", "include", "deprecated"} <= set(report[name]["directives"])
    # The options change what is asked, not what the schema is.
    assert {report[name]["sdl"] for name in (*INTROSPECTION_OPTIONS, "all")} == {
        report["descriptions"]["sdl"]
    }
    assert '"""Every book of the catalog, by title."""' in report["all"]["sdl"]


async def test_graphql_js_reads_the_schema_with_every_introspection_option(
    base_url: str,
) -> None:
    assert_every_option_is_answered(await graphql_js_introspection(f"{base_url}/graphql"))


async def test_graphql_core_builds_a_client_schema_from_the_fullest_introspection(
    client: httpx.AsyncClient,
) -> None:
    query = graphql.get_introspection_query(
        descriptions=True,
        specified_by_url=True,
        directive_is_repeatable=True,
        schema_description=True,
        input_value_deprecation=True,
        experimental_directive_deprecation=True,
        one_of=True,
    )
    response = await client.post("/graphql", json={"query": query})
    assert response.status_code == 200
    body = response.json()
    assert "errors" not in body, body
    schema = graphql.build_client_schema(body["data"])
    query_type = schema.query_type
    assert query_type is not None
    assert str(query_type.fields["books"].type) == "[Book!]!"
    assert str(query_type.fields["book"].args["id"].type) == "ID!"
    assert schema.get_directive("skip") is not None
    include = schema.get_directive("include")
    assert include is not None
    assert include.is_repeatable is False
    assert include.args["if"].deprecation_reason is None


async def test_gql_with_default_settings_fetches_the_schema_and_runs_queries(
    base_url: str,
) -> None:
    await assert_gql_works(f"{base_url}/graphql")


async def assert_gql_works(url: str, headers: dict[str, str] | None = None) -> None:
    """gql 4 as its documentation shows it: the schema fetched, then queries checked by it."""
    transport = AIOHTTPTransport(url=url, headers=headers)
    client = Client(transport=transport, fetch_schema_from_transport=True)
    async with client as session:
        books = await session.execute(gql("{ books { id title author } }"))
        assert books["books"], books
        first = books["books"][0]
        one = await session.execute(
            GraphQLRequest(
                "query One($id: ID!) { book(id: $id) { title } }",
                variable_values={"id": first["id"]},
            )
        )
    assert one == {"book": {"title": first["title"]}}
    assert client.schema is not None
    query_type = client.schema.query_type
    assert query_type is not None
    assert {"books", "book"} <= set(query_type.fields)
