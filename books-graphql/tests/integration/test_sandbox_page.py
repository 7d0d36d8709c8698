"""A browser opening the service gets the GraphiQL sandbox page, not a GraphQL error."""

from __future__ import annotations

import httpx
import pytest

from books_graphql.http.sandbox import CDN_URL

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@pytest.mark.parametrize("path", ["/", "/graphql"])
async def test_a_browser_gets_the_sandbox_with_the_example_query(
    client: httpx.AsyncClient, path: str
) -> None:
    response = await client.get(path, headers={"accept": BROWSER_ACCEPT})

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["vary"] == "Accept"
    page = response.text
    assert '"defaultQuery":"# Welcome to the book catalog.' in page
    assert "books {\\n    title\\n    author\\n  }" in page
    assert f'src="{CDN_URL}/graphiql@4.1.2/graphiql.min.js" integrity="sha384-' in page
    csp = response.headers["content-security-policy"]
    assert "connect-src 'self'" in csp
    assert "script-src https://cdn.jsdelivr.net 'sha256-" in csp


async def test_a_browser_link_with_a_query_still_gets_the_page_not_an_execution(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get(
        "/", params={"query": "{ books { title } }"}, headers={"accept": BROWSER_ACCEPT}
    )

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")


async def test_html_is_only_for_get(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/", json={"query": "{ books { title } }"}, headers={"accept": "text/html"}
    )

    assert response.status_code == 406
    assert response.json()["error"]["code"] == "NOT_ACCEPTABLE"


async def test_operational_endpoints_stay_json(client: httpx.AsyncClient) -> None:
    health = await client.get("/health", headers={"accept": BROWSER_ACCEPT})
    ready = await client.get("/ready")

    assert health.json() == {"status": "ok"}
    assert ready.status_code == 200
    assert ready.json()["checks"] == {"database": "ok", "schema": "ok"}


async def test_head_answers_like_get_without_a_body(client: httpx.AsyncClient) -> None:
    response = await client.head("/", headers={"accept": BROWSER_ACCEPT})

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.content == b""
