"""The GraphiQL sandbox in headless Chromium: the page loads, the example query runs, the
books show up.

Needs Chromium (Debian: ``apt-get install -y chromium``; or set ``CHROMIUM_BIN``) and npm:
the pinned graphiql, react and react-dom packages are installed once into a cache
(``BOOKS_TEST_CACHE_DIR``, default ``<repo>/.cache/books-graphql-sandbox``) and served from a
local HTTP server, so the test needs no CDN. Chromium is driven over its DevTools protocol
(``api_testkit.browser``); name resolution is switched off in the browser to prove no asset
comes from elsewhere. Missing tools fail the test: they are part of the test setup, not
optional.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import AsyncIterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest

from api_testkit.browser import DevTools, headless_chromium, open_page
from api_testkit.in_process import serve_in_process
from api_testkit.node import npm_install
from books_graphql.app import create_app
from books_graphql.context import wire
from books_graphql.http.sandbox import NPM_PACKAGES
from books_graphql.repository import BookRepository
from books_graphql.settings import DEFAULT_SEED_FILE, Settings

REPO_ROOT = Path(__file__).resolve().parents[3]
CACHE_DIR = Path(
    os.environ.get("BOOKS_TEST_CACHE_DIR", REPO_ROOT / ".cache" / "books-graphql-sandbox")
)


async def install_assets() -> Path:
    """``node_modules`` with the pinned packages, installed on first use."""
    return await npm_install(CACHE_DIR, NPM_PACKAGES)


class _QuietFiles(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output free of one line per asset request."""


@pytest.fixture(scope="module")
async def assets_url() -> AsyncIterator[str]:
    node_modules = await install_assets()
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietFiles, directory=str(node_modules))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
async def sandbox_url(base_url: str, assets_url: str) -> AsyncIterator[str]:
    # The repository reads through the ORM context of the session's app (``base_url``),
    # i.e. the real, seeded test database; this app only changes where assets come from.
    settings = Settings(seed_file=None, graphiql_assets_url=assets_url)
    async with serve_in_process(
        create_app(settings, context=wire(settings, repository=BookRepository()))
    ) as url:
        yield url


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[str]:
    """A headless Chromium; yields its DevTools HTTP endpoint."""
    async with headless_chromium() as endpoint:
        yield endpoint


@pytest.fixture
async def page(browser: str) -> AsyncIterator[DevTools]:
    async with open_page(browser) as devtools:
        yield devtools


def seeded_titles() -> list[str]:
    books = orjson.loads(DEFAULT_SEED_FILE.read_bytes())["books"]
    return sorted((b["title"] for b in books), key=str.casefold)


QUERY_EDITOR = "document.querySelector('.graphiql-query-editor .CodeMirror')"
RESULT_VIEWER = "document.querySelector('.result-window .CodeMirror')"


@pytest.mark.parametrize("path", ["/", "/graphql"])
async def test_the_sandbox_runs_the_example_query_and_shows_the_books(
    page: DevTools, sandbox_url: str, path: str
) -> None:
    await page.call("Page.navigate", url=f"{sandbox_url}{path}")

    await page.wait_for(
        f"!!({QUERY_EDITOR} && document.querySelector('.graphiql-execute-button'))",
        "the GraphiQL editor and its run button",
    )
    query = await page.evaluate(f"{QUERY_EDITOR}.CodeMirror.getValue()")
    assert "books" in query
    assert "title" in query
    assert "author" in query

    await page.evaluate("document.querySelector('.graphiql-execute-button').click()")
    shown = await page.wait_for(
        f"{RESULT_VIEWER} && {RESULT_VIEWER}.CodeMirror.getValue().includes('City of Glass')"
        f" && {RESULT_VIEWER}.CodeMirror.getValue()",
        "the result of the example query",
    )

    result = orjson.loads(shown)
    assert [book["title"] for book in result["data"]["books"]] == seeded_titles()
    assert {"title": "The Awakening", "author": "Kate Chopin"} in result["data"]["books"]
    assert {"title": "City of Glass", "author": "Paul Auster"} in result["data"]["books"]
    # GraphiQL's introspection and the query itself, all answered, and nothing went wrong
    # (a blocked asset or a Content-Security-Policy violation would show up here).
    statuses = page.responses(f"{sandbox_url}{path}")
    assert len(statuses) >= 3, statuses  # the page, the introspection, the query
    assert all(status == 200 for _, status in statuses), statuses
    assert page.problems() == []
