"""GraphQL over HTTP against the running service and a real, seeded database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from api_testkit.in_process import serve_in_process
from books_graphql.app import create_app
from books_graphql.context import wire
from books_graphql.repository import BookRepository
from books_graphql.settings import DEFAULT_SEED_FILE, Settings

GRAPHQL_RESPONSE = "application/graphql-response+json"
BOOKS_QUERY = "{ books { title author } }"
PREFLIGHT = {"apollo-require-preflight": "true"}


def seed_books() -> list[dict[str, str]]:
    books: list[dict[str, str]] = json.loads(Path(DEFAULT_SEED_FILE).read_text())["books"]
    return books


def by_title(book: dict[str, str]) -> tuple[str, str]:
    return book["title"].casefold(), book["id"]


async def post(
    client: httpx.AsyncClient, body: object, path: str = "/", **headers: str
) -> httpx.Response:
    return await client.post(path, json=body, headers=headers)


# --- the schema and the two queries ----------------------------------------------------------


async def test_books_returns_every_seeded_book_by_title(client: httpx.AsyncClient) -> None:
    response = await post(client, {"query": "{ books { id title author } }"})

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    expected = sorted(seed_books(), key=by_title)
    assert response.json() == {"data": {"books": expected}}


async def test_the_seed_has_the_two_classic_examples(client: httpx.AsyncClient) -> None:
    books = (await post(client, {"query": BOOKS_QUERY})).json()["data"]["books"]

    assert {"title": "The Awakening", "author": "Kate Chopin"} in books
    assert {"title": "City of Glass", "author": "Paul Auster"} in books
    assert len(books) >= 20


async def test_book_by_id_returns_that_book(client: httpx.AsyncClient) -> None:
    awakening = next(b for b in seed_books() if b["title"] == "The Awakening")

    response = await post(
        client,
        {
            "query": "query One($id: ID!) { book(id: $id) { id title author } }",
            "variables": {"id": awakening["id"]},
            "operationName": "One",
        },
    )

    assert response.status_code == 200
    assert response.json() == {"data": {"book": awakening}}


@pytest.mark.parametrize(
    "book_id", ["00000000-0000-4000-8000-000000000000", "not-a-uuid", "", "42"]
)
async def test_book_with_an_unknown_or_malformed_id_is_null(
    client: httpx.AsyncClient, book_id: str
) -> None:
    response = await post(
        client,
        {"query": "query($id: ID!) { book(id: $id) { title } }", "variables": {"id": book_id}},
    )

    assert response.status_code == 200
    assert response.json() == {"data": {"book": None}}


async def test_introspection_shows_exactly_the_contract_schema(
    client: httpx.AsyncClient,
) -> None:
    query = """
    {
      __schema { queryType { name } mutationType { name } subscriptionType { name } }
      book: __type(name: "Book") { kind fields { name type { ...TypeRef } args { name } } }
      query: __type(name: "Query") {
        fields { name type { ...TypeRef } args { name type { ...TypeRef } } }
      }
    }
    fragment TypeRef on __Type {
      kind name ofType { kind name ofType { kind name ofType { kind name } } }
    }
    """

    data = (await post(client, {"query": query})).json()["data"]

    def show(ref: dict[str, Any] | None) -> str:
        assert ref is not None
        if ref["kind"] == "NON_NULL":
            return show(ref["ofType"]) + "!"
        if ref["kind"] == "LIST":
            return "[" + show(ref["ofType"]) + "]"
        return str(ref["name"])

    assert data["__schema"] == {
        "queryType": {"name": "Query"},
        "mutationType": None,
        "subscriptionType": None,
    }
    assert data["book"]["kind"] == "OBJECT"
    assert {f["name"]: show(f["type"]) for f in data["book"]["fields"]} == {
        "id": "ID!",
        "title": "String!",
        "author": "String!",
    }
    fields = {f["name"]: f for f in data["query"]["fields"]}
    assert {name: show(f["type"]) for name, f in fields.items()} == {
        "books": "[Book!]!",
        "book": "Book",
        "booksConnection": "BookConnection!",
    }
    assert fields["books"]["args"] == []
    assert [(a["name"], show(a["type"])) for a in fields["book"]["args"]] == [("id", "ID!")]
    assert [(a["name"], show(a["type"])) for a in fields["booksConnection"]["args"]] == [
        ("first", "Int"),
        ("after", "String"),
    ]


# --- POST and GET, at / and /graphql ------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/graphql"])
async def test_post_answers_at_root_and_at_graphql(client: httpx.AsyncClient, path: str) -> None:
    response = await post(client, {"query": BOOKS_QUERY}, path)

    assert response.status_code == 200
    assert len(response.json()["data"]["books"]) == len(seed_books())


@pytest.mark.parametrize("path", ["/", "/graphql"])
async def test_get_runs_a_query_from_the_query_string(client: httpx.AsyncClient, path: str) -> None:
    awakening = next(b for b in seed_books() if b["title"] == "The Awakening")

    response = await client.get(
        path,
        params={
            "query": "query One($id: ID!) { book(id: $id) { title } }",
            "variables": json.dumps({"id": awakening["id"]}),
            "operationName": "One",
        },
        headers=PREFLIGHT,
    )

    assert response.status_code == 200
    assert response.json() == {"data": {"book": {"title": "The Awakening"}}}
    assert response.headers["vary"] == "Accept"


@pytest.mark.parametrize(
    "query",
    [
        'mutation { addBook(title: "x") { id } }',
        "subscription { books { title } }",
        "query A { books { title } } mutation B { x }",
    ],
)
async def test_get_refuses_any_operation_that_is_not_a_query_with_405(
    client: httpx.AsyncClient, query: str
) -> None:
    params = {"query": query}
    if "query A" in query:
        params["operationName"] = "B"

    response = await client.get("/graphql", params=params, headers=PREFLIGHT)

    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"


async def test_get_may_choose_the_query_of_a_document_that_also_has_a_mutation(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get(
        "/",
        params={"query": "query A { books { title } } mutation B { x }", "operationName": "A"},
        headers=PREFLIGHT,
    )

    # Not a 405: the chosen operation is a query (the document is then invalid: no Mutation).
    assert response.status_code == 200
    assert response.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
async def test_other_methods_are_405_with_allow(client: httpx.AsyncClient, method: str) -> None:
    response = await client.request(method, "/graphql")

    assert response.status_code == 405
    assert {"GET", "POST"} <= {m.strip() for m in response.headers["allow"].split(",")}
    assert response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"


# --- content negotiation and status codes ----------------------------------------------------


@pytest.mark.parametrize(
    ("accept", "media_type"),
    [
        (None, "application/json"),
        ("*/*", "application/json"),
        ("application/json", "application/json"),
        (GRAPHQL_RESPONSE, GRAPHQL_RESPONSE),
        (f"{GRAPHQL_RESPONSE}, application/json;q=0.9", GRAPHQL_RESPONSE),
        (f"application/json, {GRAPHQL_RESPONSE};q=0.5", "application/json"),
    ],
)
async def test_the_response_media_type_follows_accept(
    client: httpx.AsyncClient, accept: str | None, media_type: str
) -> None:
    headers = {"accept": accept} if accept else {}

    response = await post(client, {"query": BOOKS_QUERY}, **headers)

    assert response.status_code == 200
    assert response.headers["content-type"] == media_type
    assert "books" in response.json()["data"]


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("{ books { title ", "GRAPHQL_PARSE_FAILED"),
        ("{ books { isbn } }", "GRAPHQL_VALIDATION_FAILED"),
        ("{ book { title } }", "GRAPHQL_VALIDATION_FAILED"),
    ],
)
async def test_a_document_that_fails_to_parse_or_validate_is_400_with_graphql_response_json(
    client: httpx.AsyncClient, query: str, code: str
) -> None:
    response = await post(client, {"query": query}, accept=GRAPHQL_RESPONSE)

    assert response.status_code == 400
    assert response.headers["content-type"] == GRAPHQL_RESPONSE
    body = response.json()
    assert "data" not in body
    assert body["errors"][0]["extensions"]["code"] == code


@pytest.mark.parametrize("query", ["{ books { title ", "{ books { isbn } }"])
async def test_the_same_failure_is_200_with_errors_for_application_json_clients(
    client: httpx.AsyncClient, query: str
) -> None:
    response = await post(client, {"query": query}, accept="application/json")

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json()["errors"][0]["message"]


@pytest.mark.parametrize(
    "body",
    [
        {"query": "query($id: ID!) { book(id: $id) { title } }", "variables": {}},
        {"query": "query A { books { title } } query B { books { id } }"},
        {"query": "query A { books { title } }", "operationName": "Nope"},
    ],
)
async def test_variables_or_operations_that_cannot_be_used_are_request_errors(
    client: httpx.AsyncClient, body: dict[str, object]
) -> None:
    strict = await post(client, body, accept=GRAPHQL_RESPONSE)
    legacy = await post(client, body)

    assert strict.status_code == 400
    assert legacy.status_code == 200
    for response in (strict, legacy):
        assert "data" not in response.json()
        assert response.json()["errors"]


async def test_a_client_accepting_no_json_is_406(client: httpx.AsyncClient) -> None:
    response = await post(client, {"query": BOOKS_QUERY}, accept="application/xml")

    assert response.status_code == 406
    assert response.json()["error"]["code"] == "NOT_ACCEPTABLE"


@pytest.mark.parametrize("content_type", ["application/xml", "application/graphql"])
async def test_a_post_body_that_is_not_json_is_415(
    client: httpx.AsyncClient, content_type: str
) -> None:
    response = await client.post("/", content=BOOKS_QUERY, headers={"content-type": content_type})

    assert response.status_code == 415
    assert response.json()["error"]["code"] == "UNSUPPORTED_MEDIA_TYPE"


@pytest.mark.parametrize("body", [b"{nope", b"", b"[1, 2]", b'"query"'])
async def test_a_body_that_is_not_a_json_object_is_400_malformed_json(
    client: httpx.AsyncClient, body: bytes
) -> None:
    response = await client.post("/", content=body, headers={"content-type": "application/json"})

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "MALFORMED_JSON"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "query"),
        ({"query": 42}, "query"),
        ({"query": BOOKS_QUERY, "variables": [1]}, "variables"),
        ({"query": BOOKS_QUERY, "operationName": 7}, "operationName"),
    ],
)
async def test_parameters_of_the_wrong_type_are_400_validation_failed(
    client: httpx.AsyncClient, body: dict[str, object], field: str
) -> None:
    response = await post(client, body)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_FAILED"
    assert field in error["fields"]


async def test_a_get_without_a_query_is_400_for_api_clients(client: httpx.AsyncClient) -> None:
    response = await client.get("/graphql", headers=PREFLIGHT)

    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"query": "is required"}


async def test_every_response_carries_a_request_id(client: httpx.AsyncClient) -> None:
    ok = await post(client, {"query": BOOKS_QUERY}, **{"x-request-id": "books-1"})
    refused = await client.post("/", content=b"{", headers={"content-type": "application/json"})

    assert ok.headers["x-request-id"] == "books-1"
    assert refused.headers["x-request-id"]


# --- CSRF prevention -----------------------------------------------------------------------


async def test_a_get_without_a_preflight_header_is_refused_as_csrf(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/graphql", params={"query": BOOKS_QUERY})

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_FAILED"
    assert "Cross-Site Request Forgery" in error["message"]


@pytest.mark.parametrize(
    "headers",
    [
        {"apollo-require-preflight": "true"},
        {"x-apollo-operation-name": "Books"},
        {"content-type": "application/json"},
    ],
)
async def test_a_get_that_needs_a_preflight_is_served(
    client: httpx.AsyncClient, headers: dict[str, str]
) -> None:
    response = await client.get("/graphql", params={"query": BOOKS_QUERY}, headers=headers)

    assert response.status_code == 200
    assert response.json()["data"]["books"]


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
async def test_a_post_a_form_could_send_is_refused_as_csrf(
    client: httpx.AsyncClient, content_type: str
) -> None:
    body = json.dumps({"query": BOOKS_QUERY})

    response = await client.post("/", content=body, headers={"content-type": content_type})

    assert response.status_code == 400
    assert "Cross-Site Request Forgery" in response.json()["error"]["message"]


async def test_a_preflighted_post_with_a_simple_content_type_is_415_not_csrf(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(
        "/",
        content=json.dumps({"query": BOOKS_QUERY}),
        headers={"content-type": "text/plain", **PREFLIGHT},
    )

    assert response.status_code == 415


# --- OpenAPI ----------------------------------------------------------------------------------


async def test_the_service_describes_graphql_over_http_in_openapi(base_url: str) -> None:
    # sanic-ext keeps one OpenAPI builder per process, which the last app started owns (one
    # app per process in production): this test reads the document of an app of its own.
    settings = Settings(seed_file=None)
    app = create_app(settings, context=wire(settings, repository=BookRepository()))
    async with serve_in_process(app) as url, httpx.AsyncClient(base_url=url) as client:
        document = (await client.get("/docs/openapi.json")).json()

    graphql = document["paths"]["/graphql"]
    assert graphql["get"]["operationId"] == "getGraphql"
    assert graphql["post"]["operationId"] == "postGraphql"
    get_parameters = {p["name"]: p for p in graphql["get"]["parameters"]}
    required = [name for name, p in get_parameters.items() if p.get("required")]
    assert required == ["query", "apollo-require-preflight"]  # CSRF prevention needs the header
    for name in ("variables", "extensions"):  # JSON text of an object
        assert get_parameters[name]["content"] == {
            "application/json": {"schema": {"type": "object"}}
        }
    assert set(graphql["post"]["responses"]["200"]["content"]) == {
        "application/json",
        "application/graphql-response+json",
    }
    assert "text/html" in graphql["get"]["responses"]["200"]["content"]  # the sandbox
    assert {"400", "405", "406", "413", "415", "503"} <= set(graphql["post"]["responses"])
    request = document["components"]["schemas"]["GraphQLRequest"]
    assert request["required"] == ["query"]
    assert "/" not in document["paths"]  # the same endpoint, described once
