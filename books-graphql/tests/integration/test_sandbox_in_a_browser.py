"""The GraphiQL sandbox in headless Chromium: the page loads, the example query runs, the
books show up.

Needs Chromium (Debian: ``apt-get install -y chromium``; or set ``CHROMIUM_BIN``) and npm:
the pinned graphiql, react and react-dom packages are installed once into a cache
(``BOOKS_TEST_CACHE_DIR``, default ``<repo>/.cache/books-graphql-sandbox``) and served from a
local HTTP server, so the test needs no CDN. Chromium is driven over its DevTools protocol;
name resolution is switched off in the browser to prove no asset comes from elsewhere.
Missing tools fail the test: they are part of the test setup, not optional.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import tempfile
import threading
from collections.abc import AsyncIterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import websockets
from websockets.asyncio.client import ClientConnection

from api_testkit.in_process import serve_in_process
from api_testkit.node import npm_install
from books_graphql.app import create_app
from books_graphql.context import wire
from books_graphql.repository import BookRepository
from books_graphql.sandbox import NPM_PACKAGES
from books_graphql.settings import DEFAULT_SEED_FILE, Settings

REPO_ROOT = Path(__file__).resolve().parents[3]
CACHE_DIR = Path(
    os.environ.get("BOOKS_TEST_CACHE_DIR", REPO_ROOT / ".cache" / "books-graphql-sandbox")
)
STEP_TIMEOUT_S = 30
CALL_TIMEOUT_S = 15


def chromium_binary() -> str:
    for candidate in (os.environ.get("CHROMIUM_BIN"), "chromium", "chromium-browser"):
        if candidate and (path := shutil.which(candidate)):
            return path
    pytest.fail(
        "Chromium is needed for the sandbox test and was not found. Install it "
        "(Debian/Ubuntu: apt-get update && apt-get install -y chromium) or set CHROMIUM_BIN."
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


class DevTools:
    """A minimal client of Chromium's DevTools protocol, for one page."""

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection
        self.last_id = 0
        self.events: list[dict[str, Any]] = []

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.last_id += 1
        ident = self.last_id
        message = {"id": ident, "method": method, "params": params}
        await self.connection.send(orjson.dumps(message).decode())  # DevTools wants text frames
        while True:
            try:
                raw = await asyncio.wait_for(self.connection.recv(), CALL_TIMEOUT_S)
            except TimeoutError:
                pytest.fail(f"Chromium did not answer {method} within {CALL_TIMEOUT_S}s")
            message = orjson.loads(raw)
            if message.get("id") != ident:
                self.events.append(message)
                continue
            if "error" in message:
                pytest.fail(f"DevTools {method} failed: {message['error']}")
            result: dict[str, Any] = message["result"]
            return result

    async def evaluate(self, expression: str) -> Any:
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            pytest.fail(f"evaluating {expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, what: str) -> Any:
        """Poll ``expression`` until it is truthy; fail, saying what was awaited, after a while."""
        deadline = asyncio.get_running_loop().time() + STEP_TIMEOUT_S
        while not (value := await self.evaluate(expression)):
            if asyncio.get_running_loop().time() > deadline:
                pytest.fail(
                    f"waited {STEP_TIMEOUT_S}s for {what}; page problems: {self.problems()}; "
                    f"page text: {await self.evaluate('document.body.innerText')!r:.500}"
                )
            await asyncio.sleep(0.1)
        return value

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors seen so far."""
        found = []
        for event in self.events:
            params = event.get("params", {})
            if event.get("method") == "Runtime.exceptionThrown":
                found.append(str(params["exceptionDetails"].get("exception", params)))
            elif event.get("method") == "Runtime.consoleAPICalled" and params["type"] == "error":
                found.append(" ".join(str(a.get("value", a)) for a in params["args"]))
            elif event.get("method") == "Log.entryAdded" and params["entry"]["level"] == "error":
                found.append(f"{params['entry']['text']} ({params['entry'].get('url', '')})")
        return found

    def responses(self, url: str) -> list[tuple[str, int]]:
        """The statuses of the responses the page received from ``url``."""
        return [
            (e["params"]["response"]["url"], e["params"]["response"]["status"])
            for e in self.events
            if e.get("method") == "Network.responseReceived"
            and e["params"]["response"]["url"] == url
        ]


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[str]:
    """A headless Chromium; yields its DevTools HTTP endpoint."""
    binary = chromium_binary()
    with tempfile.TemporaryDirectory(prefix="books-chromium-") as profile:
        arguments = [
            "--headless=new",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            # Nothing but this machine resolves: a CDN asset would fail to load.
            "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
            "about:blank",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            arguments.insert(0, "--no-sandbox")  # Chromium refuses to sandbox as root (CI)
        process = await asyncio.create_subprocess_exec(
            binary, *arguments, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        try:
            yield await _devtools_endpoint(process, Path(profile) / "DevToolsActivePort")
        finally:
            if process.returncode is None:
                process.terminate()
                try:
                    await asyncio.wait_for(process.wait(), 10)
                except TimeoutError:
                    process.kill()
                    await process.wait()


async def _devtools_endpoint(process: asyncio.subprocess.Process, port_file: Path) -> str:
    deadline = asyncio.get_running_loop().time() + STEP_TIMEOUT_S
    while not (port := _written_port(port_file)):
        if process.returncode is not None:
            assert process.stderr is not None
            error = (await process.stderr.read()).decode()[-2000:]
            pytest.fail(f"Chromium exited with {process.returncode}:\n{error}")
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"Chromium did not open its DevTools port within {STEP_TIMEOUT_S}s")
        await asyncio.sleep(0.05)
    return f"http://127.0.0.1:{port}"


def _written_port(port_file: Path) -> str | None:
    """The port Chromium wrote to DevToolsActivePort (first line), once it has."""
    try:
        text = port_file.read_text()
    except FileNotFoundError:
        return None
    return text.split()[0] if text.strip() else None


@pytest.fixture
async def page(browser: str) -> AsyncIterator[DevTools]:
    async with httpx.AsyncClient() as client:
        target = (await client.put(f"{browser}/json/new?about:blank")).json()
    async with websockets.connect(target["webSocketDebuggerUrl"], max_size=None) as connection:
        devtools = DevTools(connection)
        for domain in ("Runtime", "Log", "Network", "Page"):
            await devtools.call(f"{domain}.enable")
        yield devtools
    async with httpx.AsyncClient() as client:
        await client.get(f"{browser}/json/close/{target['id']}")


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
