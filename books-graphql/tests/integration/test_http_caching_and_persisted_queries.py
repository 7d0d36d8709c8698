"""GET answers are HTTP-cacheable (ETag, Cache-Control, 304) and queries can be persisted.

The persisted-query exchange is checked twice: by hand, for each rule of Apollo's protocol,
and with Apollo Client's own persisted-queries link (npm, run with node).
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

CLIENT_PACKAGES = ("@apollo/client@3.14.1", "graphql@16.15.0")
CLIENT_SCRIPT = Path(__file__).parents[1] / "data" / "apollo_client_persisted_queries.mjs"
QUERY = "{ books { title } }"
NodePackages = Callable[[str, tuple[str, ...]], Awaitable[Path]]  # conftest's node_packages
NODE_TIMEOUT_S = 300
# GET without this (or a non-simple content type) is refused as a possible CSRF (protocol).
PREFLIGHTED = {"apollo-require-preflight": "true"}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def persisted(digest: str, version: int = 1) -> dict[str, object]:
    return {"persistedQuery": {"version": version, "sha256Hash": digest}}


def get_params(
    query: str | None = None, extensions: dict[str, object] | None = None
) -> dict[str, str]:
    params = {"query": query} if query is not None else {}
    if extensions:
        params["extensions"] = orjson.dumps(extensions).decode()
    return params


# --- HTTP caching ---------------------------------------------------------------------------


async def test_a_get_answer_has_an_etag_and_cache_control_and_revalidates_to_304(
    client: httpx.AsyncClient,
) -> None:
    first = await client.get("/graphql", params={"query": QUERY}, headers=PREFLIGHTED)
    etag = first.headers["etag"]
    again = await client.get(
        "/graphql", params={"query": QUERY}, headers={**PREFLIGHTED, "if-none-match": etag}
    )
    other = await client.get(
        "/graphql",
        params={"query": QUERY},
        headers={**PREFLIGHTED, "if-none-match": '"something-else"'},
    )

    assert first.status_code == 200
    assert first.json()["data"]["books"]
    assert first.headers["cache-control"] == "public, max-age=0"
    assert etag.startswith('"')
    assert etag.endswith('"')
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    assert other.status_code == 200
    assert other.headers["etag"] == etag


@pytest.mark.parametrize("if_none_match", ["", "not-a-tag", ", ,", 'W/"'])
async def test_an_empty_or_malformed_if_none_match_names_nothing_and_gets_the_full_answer(
    client: httpx.AsyncClient, if_none_match: str
) -> None:
    """Unlike orders' If-Match (a guard on a write, 400 when malformed), a condition a GET
    cannot evaluate only costs the client its 304: the answer is the full one."""
    plain = await client.get("/graphql", params={"query": QUERY}, headers=PREFLIGHTED)

    response = await client.get(
        "/graphql", params={"query": QUERY}, headers={**PREFLIGHTED, "if-none-match": if_none_match}
    )

    assert response.status_code == 200
    assert response.content == plain.content
    assert response.headers["etag"] == plain.headers["etag"]


async def test_each_representation_has_its_own_etag(client: httpx.AsyncClient) -> None:
    as_json = await client.get("/graphql", params={"query": QUERY}, headers=PREFLIGHTED)
    as_graphql = await client.get(
        "/graphql",
        params={"query": QUERY},
        headers={**PREFLIGHTED, "accept": "application/graphql-response+json"},
    )

    assert as_json.content == as_graphql.content
    assert as_json.headers["etag"] != as_graphql.headers["etag"]
    assert as_json.headers["vary"] == "Accept"


async def test_answers_with_errors_and_posts_are_not_cacheable(client: httpx.AsyncClient) -> None:
    failed = await client.get(
        "/graphql", params={"query": "{ books { nope } }"}, headers=PREFLIGHTED
    )
    posted = await client.post("/graphql", json={"query": QUERY})

    assert failed.json()["errors"]
    assert failed.headers["cache-control"] == "no-store"
    assert "etag" not in failed.headers
    assert "etag" not in posted.headers
    assert "cache-control" not in posted.headers


# --- persisted queries, by hand ----------------------------------------------------------


async def test_an_unknown_hash_is_not_found_then_registered_with_its_query(
    client: httpx.AsyncClient,
) -> None:
    query = "query ByHand { books { author } }"
    extensions = persisted(sha256(query))

    unknown = await client.post("/graphql", json={"extensions": extensions})
    registered = await client.post("/graphql", json={"query": query, "extensions": extensions})
    by_hash = await client.post("/graphql", json={"extensions": extensions})
    by_get = await client.get(
        "/graphql", params=get_params(extensions=extensions), headers=PREFLIGHTED
    )

    assert unknown.status_code == 200
    assert unknown.json() == {
        "errors": [
            {
                "message": "PersistedQueryNotFound",
                "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"},
            }
        ]
    }
    assert unknown.headers["cache-control"] == "no-store"
    assert registered.json()["data"]["books"]
    assert by_hash.json() == registered.json()
    assert by_get.json() == registered.json()
    assert by_get.headers["etag"]


async def test_a_hash_that_is_not_the_querys_is_refused_and_registers_nothing(
    client: httpx.AsyncClient,
) -> None:
    query = "query Mismatch { books { id } }"
    wrong = persisted(sha256("something else"))

    refused = await client.post("/graphql", json={"query": query, "extensions": wrong})
    after = await client.post("/graphql", json={"extensions": wrong})

    assert refused.status_code == 400
    assert refused.json()["errors"][0]["message"] == "provided sha does not match query"
    assert after.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"


@pytest.mark.parametrize(
    "extension",
    [
        {"persistedQuery": {"version": 2, "sha256Hash": sha256(QUERY)}},
        {"persistedQuery": {"sha256Hash": sha256(QUERY)}},
        {"persistedQuery": {"version": 1, "sha256Hash": "abc"}},
        {"persistedQuery": {"version": 1, "sha256Hash": 12}},
        {"persistedQuery": "yes"},
    ],
)
async def test_malformed_persisted_query_extensions_are_bad_requests(
    client: httpx.AsyncClient, extension: dict[str, object]
) -> None:
    response = await client.post("/graphql", json={"query": QUERY, "extensions": extension})

    assert response.status_code == 400
    assert response.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"


async def test_an_invalid_query_is_not_registered(client: httpx.AsyncClient) -> None:
    query = "{ books { nope } }"
    extensions = persisted(sha256(query))

    invalid = await client.post("/graphql", json={"query": query, "extensions": extensions})
    by_hash = await client.post("/graphql", json={"extensions": extensions})

    assert invalid.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    assert by_hash.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"


# --- persisted queries, with Apollo Client -----------------------------------------------------


async def _apollo_client(
    node_packages: NodePackages, url: str, mode: str, query: str
) -> dict[str, Any]:
    folder = await node_packages("apollo-client", CLIENT_PACKAGES)
    # ESM resolves packages from the script's folder: the script runs beside node_modules.
    script = folder / CLIENT_SCRIPT.name
    shutil.copyfile(CLIENT_SCRIPT, script)
    process = await asyncio.create_subprocess_exec(
        "node", str(script), url, mode, query,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), NODE_TIMEOUT_S)
    assert process.returncode == 0, err.decode()
    result: dict[str, Any] = orjson.loads(out)
    return result


@pytest.mark.parametrize("mode", ["post", "get"])
async def test_apollo_clients_persisted_queries_link_registers_then_sends_only_the_hash(
    base_url: str, mode: str, node_packages: NodePackages
) -> None:
    query = f"query Link{mode.title()} {{ books {{ title author }} }}"

    result = await _apollo_client(node_packages, f"{base_url}/graphql", mode, query)

    exchanges = result["exchanges"]
    assert isinstance(exchanges, list)
    first, retry, second = exchanges
    assert result["exchangesOfFirst"] == 2
    # The first client sends the hash alone, is told it is unknown, retries with the query.
    assert "PersistedQueryNotFound" in first["responseBody"]
    assert "query" not in (first["requestBody"] or "")
    assert "query=" not in first["url"]
    assert retry["status"] == 200
    assert "books" in retry["responseBody"]
    # The second client's single exchange carries the hash alone, and is answered.
    assert second["status"] == 200
    assert (second["method"] == "GET") is (mode == "get")
    sent = second["url"] if mode == "get" else second["requestBody"]
    assert "sha256Hash" in sent
    assert "books" not in sent
    assert result["first"] == result["second"]
    books = result["second"]["books"]
    assert books
    assert set(books[0]) == {"__typename", "title", "author"}
