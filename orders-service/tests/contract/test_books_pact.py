"""orders-service's contract with books-graphql: which of an order's books exist?
(``BooksGraphqlCatalog``: one query, one ``book(id:)`` alias per id)

The real client asks Pact's mock books-graphql; the pact it writes must equal the committed
``contracts/pacts/orders-service-books-graphql.json``, which books-graphql's own suite
verifies against a real books-graphql (books-graphql/tests/contract).
"""

from __future__ import annotations

from pathlib import Path

from api_testkit.http_sessions import open_session
from api_testkit.pacts import BOOKS_GRAPHQL, ORDERS_SERVICE, new_pact, written_pact
from orders_service.clients import BooksGraphqlCatalog, books_query

IN_CATALOG = "3b9f6c1e-7d2a-4f58-9c0b-8e1d2a3f4b5c"
NOT_IN_CATALOG = "00000000-0000-4000-8000-00000000b00c"
GRAPHQL_RESPONSE = "application/graphql-response+json"


async def test_orders_service_asks_books_graphql_which_books_exist(tmp_path: Path) -> None:
    pact = new_pact(ORDERS_SERVICE, BOOKS_GRAPHQL)
    (
        pact.upon_receiving("a query for a book in the catalog and one that is not")
        .given("a book is in the catalog", id=IN_CATALOG)
        .given("no book has the id", id=NOT_IN_CATALOG)
        .with_request("POST", "/graphql")
        .with_header("Accept", f"{GRAPHQL_RESPONSE}, application/json;q=0.9")
        .with_body(
            {
                "query": books_query(["b0", "b1"]),
                "variables": {"b0": IN_CATALOG, "b1": NOT_IN_CATALOG},
            },
            "application/json",
        )
        .will_respond_with(200)
        .with_body({"data": {"b0": {"id": IN_CATALOG}, "b1": None}}, GRAPHQL_RESPONSE)
    )
    with pact.serve() as mock:
        async with open_session(timeout_s=5.0) as http:
            catalog = BooksGraphqlCatalog(http, f"{mock.url}/graphql")
            assert await catalog.unknown([IN_CATALOG, NOT_IN_CATALOG]) == {NOT_IN_CATALOG}
    written_pact(tmp_path, pact)
