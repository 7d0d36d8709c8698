"""Pages in a real browser: headless Chromium driven over its DevTools protocol.

For the tests of the pages the platform serves to people (GraphiQL's sandbox, the gateway's
Swagger UI): they load, run their scripts under their Content-Security-Policy and Subresource
Integrity, and say nothing wrong in the console. Name resolution is switched off in the
browser (everything but 127.0.0.1 is NOTFOUND), so nothing comes from elsewhere unless a
test serves it itself (``DevTools.serve``: the bytes a CDN would send, intercepted before any
request leaves the browser).

Needs Chromium (Debian: ``apt-get install -y chromium``; or set ``CHROMIUM_BIN``); a missing
browser fails the test, never skips it.
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import websockets
from websockets.asyncio.client import ClientConnection

STEP_TIMEOUT_S = 30
CALL_TIMEOUT_S = 15


def chromium_binary() -> str:
    for candidate in (os.environ.get("CHROMIUM_BIN"), "chromium", "chromium-browser"):
        if candidate and (path := shutil.which(candidate)):
            return path
    pytest.fail(
        "Chromium is needed for the browser tests and was not found. Install it "
        "(Debian/Ubuntu: apt-get update && apt-get install -y chromium) or set CHROMIUM_BIN."
    )


class DevTools:
    """A minimal client of Chromium's DevTools protocol, for one page.

    One reader task takes every message: answers go to their callers, events are kept in
    ``events`` (and the requests paused for ``serve`` are answered from its files).
    """

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection
        self.last_id = 0
        self.events: list[dict[str, Any]] = []
        self._answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._served: dict[str, tuple[bytes, str]] = {}
        self._replies: set[asyncio.Task[None]] = set()
        self._reader = asyncio.create_task(self._read())

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.last_id += 1
        answer = self._answers[self.last_id] = asyncio.get_running_loop().create_future()
        message = {"id": self.last_id, "method": method, "params": params}
        await self.connection.send(orjson.dumps(message).decode())  # DevTools wants text frames
        try:
            reply = await asyncio.wait_for(answer, CALL_TIMEOUT_S)
        except TimeoutError:
            pytest.fail(f"Chromium did not answer {method} within {CALL_TIMEOUT_S}s")
        if "error" in reply:
            pytest.fail(f"DevTools {method} failed: {reply['error']}")
        result: dict[str, Any] = reply["result"]
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

    async def serve(self, files: Mapping[str, tuple[bytes, str]]) -> None:
        """Answer requests for these URLs (URL → body and content type) as a CDN would:
        with the bytes, the content type and ``Access-Control-Allow-Origin: *``."""
        self._served.update(files)
        patterns = [{"urlPattern": url, "requestStage": "Request"} for url in self._served]
        await self.call("Fetch.enable", patterns=patterns)

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors (a blocked asset or a
        Content-Security-Policy violation among them) seen so far."""
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

    async def close(self) -> None:
        self._reader.cancel()
        await asyncio.gather(self._reader, *self._replies, return_exceptions=True)

    async def _read(self) -> None:
        async for raw in self.connection:
            message = orjson.loads(raw)
            answer = self._answers.pop(message.get("id", -1), None)
            if answer is not None:
                if not answer.done():
                    answer.set_result(message)
                continue
            self.events.append(message)
            if message.get("method") == "Fetch.requestPaused":
                reply = asyncio.create_task(self._fulfil(message["params"]))
                self._replies.add(reply)
                reply.add_done_callback(self._replies.discard)

    async def _fulfil(self, paused: dict[str, Any]) -> None:
        served = self._served.get(paused["request"]["url"])
        if served is None:
            await self.call(
                "Fetch.failRequest", requestId=paused["requestId"], errorReason="Failed"
            )
            return
        body, content_type = served
        await self.call(
            "Fetch.fulfillRequest",
            requestId=paused["requestId"],
            responseCode=200,
            responseHeaders=[
                {"name": "Content-Type", "value": content_type},
                {"name": "Access-Control-Allow-Origin", "value": "*"},
            ],
            body=base64.b64encode(body).decode(),
        )


@asynccontextmanager
async def headless_chromium() -> AsyncIterator[str]:
    """A headless Chromium that resolves no name but 127.0.0.1; yields its DevTools HTTP
    endpoint."""
    binary = chromium_binary()
    with tempfile.TemporaryDirectory(prefix="api-platform-chromium-") as profile:
        arguments = [
            "--headless=new",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            # Nothing but this machine resolves: an asset from elsewhere would fail to load.
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


@asynccontextmanager
async def open_page(endpoint: str) -> AsyncIterator[DevTools]:
    """A new blank page of the browser at ``endpoint``, its events recorded; closed after."""
    async with httpx.AsyncClient() as client:
        target = (await client.put(f"{endpoint}/json/new?about:blank")).json()
    async with websockets.connect(target["webSocketDebuggerUrl"], max_size=None) as connection:
        devtools = DevTools(connection)
        try:
            for domain in ("Runtime", "Log", "Network", "Page"):
                await devtools.call(f"{domain}.enable")
            yield devtools
        finally:
            await devtools.close()
    async with httpx.AsyncClient() as client:
        await client.get(f"{endpoint}/json/close/{target['id']}")


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
