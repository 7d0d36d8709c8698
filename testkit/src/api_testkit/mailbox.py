"""Reading a mail server's messages through Mailpit's HTTP API (``GET /api/v1/messages``,
``GET /api/v1/message/{ID}``): the platform's catcher serves it, and so does Mailpit."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

WAIT_TIMEOUT_S = 30.0
LINK = re.compile(r"https?://[^\s<>\"]+")


class Mailbox:
    """The messages a mail server received, by recipient."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    async def messages_to(self, address: str) -> list[dict[str, Any]]:
        """Every message to ``address`` (case folded), oldest first, in full (Text, HTML)."""
        async with httpx.AsyncClient(base_url=self.url, timeout=10.0) as client:
            listing = (await client.get("/api/v1/messages", params={"limit": 500})).json()
            ids = [
                summary["ID"]
                for summary in reversed(listing["messages"])  # newest first there
                if any(to["Address"].lower() == address.lower() for to in summary["To"])
            ]
            return [(await client.get(f"/api/v1/message/{id_}")).json() for id_ in ids]

    async def wait_for(
        self, address: str, count: int = 1, timeout_s: float = WAIT_TIMEOUT_S
    ) -> list[dict[str, Any]]:
        """The messages to ``address`` once there are ``count``; fail after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                messages = await self.messages_to(address)
            except httpx.TransportError:
                messages = []  # the server restarting
            if len(messages) >= count:
                return messages
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{address} received {len(messages)} messages within {timeout_s} s, not {count}"
                )
            await asyncio.sleep(0.1)


def token_of(message: dict[str, Any], path: str) -> str:
    """The ``token`` query parameter of the message's link to ``path``."""
    for link in LINK.findall(message["Text"]):
        parts = urlsplit(link)
        if parts.path == path:
            token: str = parse_qs(parts.query)["token"][0]
            return token
    raise AssertionError(f"no link to {path} in {message['Text']!r}")
