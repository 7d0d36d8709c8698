"""books-graphql keeps every contract its consumers committed (``contracts/pacts/*-books-graphql
.json``): their queries replayed on a real books-graphql process with its own database.

A book "is in the catalog" the way an operator puts it there: ``python -m books_graphql
import`` of a file holding it, on the process's database; the running server sees it once
the catalog's version moves (waited for before the query is replayed).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from api_testkit.neighbours import running_books_graphql
from api_testkit.pacts import BOOKS_GRAPHQL, verify_pacts
from api_testkit.processes import Service

VISIBLE_TIMEOUT_S = 10.0


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Service]:
    async with running_books_graphql(tmp_path_factory.mktemp("books"), books=()) as service:
        yield service


class States:
    """The provider states the consumers name, each made on the running catalog."""

    def __init__(self, provider: Service, folder: Path) -> None:
        self.provider, self.folder = provider, folder

    async def book_in_catalog(self, params: dict[str, Any]) -> dict[str, str]:
        book_id = str(params["id"])
        books = self.folder / f"{book_id}.jsonl"
        books.write_bytes(orjson.dumps({"id": book_id, "title": "Contract", "author": "Pact"}))
        importing = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "books_graphql", "import", str(books),
            env={**self.provider.env, "LOG_LEVEL": "WARNING"},
        )  # fmt: skip
        assert await importing.wait() == 0, "the import failed"
        await self._until_visible(book_id)
        return {}

    async def no_such_book(self, params: dict[str, Any]) -> dict[str, str]:
        return {}  # the catalog starts empty and books are only ever added

    async def _until_visible(self, book_id: str) -> None:
        """Until the server answers the book: it reads the catalog's version every few ms."""
        query = {"query": "query($id: ID!) { book(id: $id) { id } }", "variables": {"id": book_id}}
        async with (
            httpx.AsyncClient(base_url=self.provider.url) as client,
            asyncio.timeout(VISIBLE_TIMEOUT_S),
        ):
            while True:
                answer = (await client.post("/graphql", json=query)).json()
                if answer["data"]["book"] is not None:
                    return
                await asyncio.sleep(0.01)


async def test_books_graphql_keeps_its_consumers_contracts(
    provider: Service, tmp_path: Path
) -> None:
    states = States(provider, tmp_path)
    await verify_pacts(
        BOOKS_GRAPHQL,
        url=provider.url,
        states={
            "a book is in the catalog": states.book_in_catalog,
            "no book has the id": states.no_such_book,
        },
    )
