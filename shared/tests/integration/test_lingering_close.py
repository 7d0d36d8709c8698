"""A body or a head over the limit is answered 413, and the client reads it
(api_shared.lingering)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sanic import Request, Sanic
from sanic.response import HTTPResponse, empty

from api_shared.service_app import create_service_app
from api_shared.settings import ServiceSettings
from api_testkit.in_process import serve_in_process

LIMIT = 64 * 1024
BODY = 1_800_000  # what a large GraphQL document weighs
CHUNK = 64 * 1024
ATTEMPTS = 30
HEAD_SENT = 1024 * 1024  # of headers: far more than Sanic reads (8 KiB) and the buffers hold


def oversize_head(length: int) -> bytes:
    return (
        f"POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def read_answer(sock: socket.socket) -> str:
    """``"<status> <code>"`` of the answer on ``sock``, or the connection error met instead."""
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
        return read_answer(sock)


def send_an_oversize_head(port: int) -> str:
    """Send a head far over Sanic's 8 KiB in one go, as a client that writes before it reads:
    the server refuses it with most of it still unread in its socket (as over a slow path);
    returns ``"<status> <code>"`` or the error met instead."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        head = b"GET /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * HEAD_SENT
        # A server that stopped reading: the answer may still be there to read.
        with contextlib.suppress(OSError):
            sock.sendall(head + b"\r\n\r\n")
        return read_answer(sock)


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


async def test_a_client_still_sending_a_head_over_the_limit_reads_the_413() -> None:
    async with limited_service() as port:
        outcomes = [await asyncio.to_thread(send_an_oversize_head, port) for _ in range(ATTEMPTS)]

    assert outcomes == ["413 PAYLOAD_TOO_LARGE"] * ATTEMPTS


async def test_a_client_that_never_stops_uploading_is_cut_off() -> None:
    async with limited_service() as port:
        stopped_by = await asyncio.to_thread(upload_endlessly, port)

    # Reset or broken pipe: the server closed before reading all of it.
    assert stopped_by in {"ConnectionResetError", "BrokenPipeError"}
