"""The book catalog as a client reads it, through GraphQL, and as an operator fills it."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path

import httpx
import orjson

from .paths import REPO

# Generated books' ids: uuid5 of their number in this namespace, the same every run.
GENERATED_IDS = uuid.UUID("5c0f8a52-6a54-4d0e-9a57-0b4f3f2d1e39")
IMPORT_TIMEOUT_S = 120.0


async def book_ids(client: httpx.AsyncClient) -> list[str]:
    """Every book's id, in the catalog's order."""
    response = await client.post("/graphql", json={"query": "{ books { id } }"})
    assert response.status_code == 200, response.text
    return [book["id"] for book in response.json()["data"]["books"]]


def generated_books(count: int) -> list[dict[str, str]]:
    """``count`` distinct books (``{id, title, author}``), the same every run."""
    return [
        {
            "id": str(uuid.uuid5(GENERATED_IDS, str(number))),
            "title": f"Generated Title {number:05d}",
            "author": f"Author {number % 997:03d}",
        }
        for number in range(count)
    ]


async def import_books(
    books: list[dict[str, str]], folder: Path, books_env: Mapping[str, str]
) -> str:
    """Add ``books`` as an operator does: a JSON file, ``python -m books_graphql import``.

    ``books_env`` is the books service's environment (its ``BOOKS_DATABASE_URL``); the
    command's output (its report line) is returned, and a failure fails the caller.
    """
    path = folder / "catalog.json"
    path.write_bytes(orjson.dumps({"books": books}))
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "books_graphql", "import", str(path), "--no-progress",
        cwd=REPO, env=dict(books_env),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(process.communicate(), IMPORT_TIMEOUT_S)
    text = output.decode(errors="replace")
    assert process.returncode == 0, text
    return text
