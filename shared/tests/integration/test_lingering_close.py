"""A body over the limit is answered 413, and the client reads it (api_shared.lingering)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sanic import Request, Sanic
from sanic.response import HTTPResponse, empty

from api_shared.service import create_service_app
from api_shared.settings import ServiceSettings
from api_testkit.in_process import serve_in_process

LIMIT = 64 * 1024
BODY = 1_800_000  # what a large GraphQL document weighs
CHUNK = 64 * 1024
ATTEMPTS = 30


def oversize_head(length: int) -> bytes:
    return (
        f"POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def upload_oversize(port: int) -> str:
    """POST a body over the limit in chunks, as a client that uploads before it reads.

    Returns ``"<status> <code>"`` of the answer, or the connection error met instead.
    """
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        try:
            sock.sendall(oversize_head(BODY))
            for sent in range(0, BODY, CHUNK):
                sock.sendall(b"x" * min(CHUNK, BODY - sent))
        except OSError:
            pass  # a server that stops reading: the answer may still be there to read
        answer = bytearray()
        try:
            while data := sock.recv(65536):
                answer += data
        except OSError as error:
            return type(error).__name__
    status_line, _, rest = bytes(answer).partition(b"\r\n")
    if not status_line:
        return "no answer"
    body = json.loads(rest.partition(b"\r\n\r\n")[2])
    return f"{status_line.split()[1].decode()} {body['error']['code']}"


def upload_endlessly(port: int) -> str:
    """Keep uploading a body that never ends; returns what stopped the upload.

    64 MiB is far more than the server drains and the kernel's buffers hold together.
    """
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(oversize_head(10**12))
        try:
            for _ in range(64 * 1024 * 1024 // CHUNK):
                sock.sendall(b"x" * CHUNK)
        except OSError as error:
            return type(error).__name__
    return "64 MiB accepted"


@asynccontextmanager
async def limited_service() -> AsyncIterator[int]:
    """A service with a small body limit and a POST route, served in process; its port."""
    Sanic.test_mode = True
    settings = ServiceSettings(environment="development", max_body_bytes=LIMIT)
    app = create_service_app("lingering-close", settings)

    @app.post("/upload")
    async def upload(request: Request) -> HTTPResponse:
        return empty()  # never reached: the body is refused before the handler runs

    async with serve_in_process(app) as url:
        yield int(url.rsplit(":", 1)[1])


async def test_every_client_uploading_past_the_limit_reads_the_413() -> None:
    async with limited_service() as port:
        outcomes = [await asyncio.to_thread(upload_oversize, port) for _ in range(ATTEMPTS)]

    assert outcomes == ["413 PAYLOAD_TOO_LARGE"] * ATTEMPTS


async def test_a_client_that_never_stops_uploading_is_cut_off() -> None:
    async with limited_service() as port:
        stopped_by = await asyncio.to_thread(upload_endlessly, port)

    # Reset or broken pipe: the server closed before reading all of it.
    assert stopped_by in {"ConnectionResetError", "BrokenPipeError"}
