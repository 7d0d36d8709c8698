"""Requests httpx cannot send (raw NUL bytes, invalid UTF-8 in headers, duplicate or
malformed framing headers): written on a socket as given, the answer read as it comes."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

HEAD_SENT = 16 * 1024  # of an oversized head: twice what Sanic reads before refusing it


@dataclass
class RawResponse:
    """What came back on the socket; ``status_code`` 0 when the server closed without a word."""

    status_code: int
    headers: dict[str, str] = field(default_factory=dict)  # names lower-cased
    content: bytes = b""

    def json(self) -> Any:
        return json.loads(self.content)


async def raw_request(
    base_url: str, request: bytes, timeout_s: float = 10.0, send_at_most: int | None = None
) -> RawResponse:
    """Send ``request`` bytes as they are on a fresh connection; read until the server closes.

    ``send_at_most`` stops the upload there, as a slow client would be stopped by an early
    answer: a server closing with unread bytes in its socket resets the connection, and the
    reset can destroy the answer before it is read.
    """
    parts = urlsplit(base_url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        writer.write(request[:send_at_most])
        with contextlib.suppress(ConnectionError):  # refused mid-upload: answer waiting
            await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout_s)
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    if not lines[0].startswith("HTTP/1.1 "):
        return RawResponse(0)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return RawResponse(int(lines[0].split(" ")[1]), headers, body)


def http(
    method: str,
    target: bytes | str,
    headers: Iterable[tuple[bytes | str, bytes | str]] = (),
    body: bytes = b"",
) -> bytes:
    """An HTTP/1.1 request, byte for byte: nothing is validated or encoded on the way."""

    def raw(value: bytes | str) -> bytes:
        return value if isinstance(value, bytes) else value.encode()

    lines = [b"%s %s HTTP/1.1" % (raw(method), raw(target)), b"Host: 127.0.0.1"]
    lines += [b"%s: %s" % (raw(name), raw(value)) for name, value in headers]
    lines.append(b"Connection: close")
    if body:
        lines.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body
