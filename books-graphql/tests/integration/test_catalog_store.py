"""The catalog's own store: seeding at start-up and the import command, on a real database."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from uuid import UUID

import httpx
import orjson
import pytest

from api_testkit.ports import free_port
from api_testkit.readiness import process_exited, until_ready
from books_graphql.catalog import Book, derived_book_id
from books_graphql.repository import BookRepository
from books_graphql.services import BookService
from books_graphql.settings import DEFAULT_SEED_FILE

OpenCatalog = Callable[[str], AbstractAsyncContextManager[BookRepository]]
SEED_COUNT = len(orjson.loads(DEFAULT_SEED_FILE.read_bytes())["books"])
AWAKENING_ID = "3dc6d567-b05b-5923-880a-6f895eef849d"
SUBPROCESS_TIMEOUT_S = 60


def service_environment(database_url: str, **extra: str) -> dict[str, str]:
    return {**os.environ, "BOOKS_DATABASE_URL": database_url, "LOG_LEVEL": "WARNING", **extra}


async def run_cli(database_url: str, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "books_graphql", *args,
        env=service_environment(database_url),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), SUBPROCESS_TIMEOUT_S)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


# --- seeding -------------------------------------------------------------------------------


async def test_seeding_twice_adds_the_seed_books_once(
    fresh_database: str, open_catalog: OpenCatalog
) -> None:
    async with open_catalog(fresh_database) as books:
        first = await BookService(books).seed(DEFAULT_SEED_FILE)
        second = await BookService(books).seed(DEFAULT_SEED_FILE)
        stored = await books.list_all()

    assert (first.read, first.added) == (SEED_COUNT, SEED_COUNT)
    assert (second.read, second.added) == (SEED_COUNT, 0)
    assert len(stored) == SEED_COUNT


async def test_seeding_never_overwrites_a_book_already_there(
    fresh_database: str, open_catalog: OpenCatalog
) -> None:
    async with open_catalog(fresh_database) as books:
        await books.add_missing([Book(id=AWAKENING_ID, title="The Awakening (ed.)", author="K")])
        await BookService(books).seed(DEFAULT_SEED_FILE)
        kept = await books.get(UUID(AWAKENING_ID))

    assert kept == Book(id=AWAKENING_ID, title="The Awakening (ed.)", author="K")


async def test_concurrent_seeding_inserts_each_book_once(
    fresh_database: str, open_catalog: OpenCatalog
) -> None:
    async with open_catalog(fresh_database) as books:
        await asyncio.gather(*(BookService(books).seed(DEFAULT_SEED_FILE) for _ in range(3)))
        stored = await books.list_all()

    assert len(stored) == SEED_COUNT
    assert len({book.id for book in stored}) == SEED_COUNT


@pytest.fixture
async def two_replicas(fresh_database: str, tmp_path: Path) -> AsyncIterator[list[str]]:
    """Two server processes started at the same moment on one fresh database."""
    ports = [free_port(), free_port()]
    logs = [(tmp_path / f"replica-{i}.log").open("wb") for i in range(2)]
    processes = []
    for port, log in zip(ports, logs, strict=True):
        environment = service_environment(fresh_database, BOOKS_PORT=str(port))
        command = (sys.executable, "-m", "books_graphql", "serve")
        processes.append(
            await asyncio.create_subprocess_exec(
                *command, env=environment, stdout=log, stderr=asyncio.subprocess.STDOUT
            )
        )
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    try:
        for url, process, log in zip(urls, processes, logs, strict=True):
            await _until_ready(url, process, Path(log.name))
        yield urls
    finally:
        for process in processes:
            if process.returncode is None:
                process.terminate()
        for process in processes:
            await asyncio.wait_for(process.wait(), SUBPROCESS_TIMEOUT_S)
        for log in logs:
            log.close()


async def _until_ready(url: str, process: asyncio.subprocess.Process, log: Path) -> None:
    exited = process_exited(process, log)
    await until_ready(f"{url}/ready", exited, timeout_s=SUBPROCESS_TIMEOUT_S, interval_s=0.1)


async def test_replicas_starting_together_seed_the_catalog_exactly_once(
    two_replicas: list[str],
) -> None:
    seen = []
    for url in two_replicas:
        async with httpx.AsyncClient(base_url=url) as client:
            response = await client.post("/graphql", json={"query": "{ books { id } }"})
            seen.append(sorted(book["id"] for book in response.json()["data"]["books"]))

    assert len(seen[0]) == SEED_COUNT
    assert seen[0] == seen[1]


# --- the import command --------------------------------------------------------------------


async def test_help_lists_every_command_import_included(fresh_database: str) -> None:
    status, out, _ = await run_cli(fresh_database, "--help")

    assert status == 0
    commands = out.split("commands:", 1)[1].split()
    assert {"serve", "migrate", "makemigrations", "import"} <= set(commands)


async def test_import_adds_books_from_csv_and_a_rerun_adds_nothing(
    fresh_database: str, open_catalog: OpenCatalog, tmp_path: Path
) -> None:
    given_id = "6f1d2c3b-4a59-4e8f-9d0c-1b2a3c4d5e6f"
    file = tmp_path / "books.csv"
    file.write_text(
        "Title,Author,id\n"
        f"Kindred,Octavia E. Butler,{given_id}\n"
        '"Giovanni\'s Room","James Baldwin",\n'
        "  Solaris ,Stanisław Lem,\n",
        encoding="utf-8",
    )

    status, out, err = await run_cli(fresh_database, "import", str(file), "--progress")
    rerun_status, rerun_out, _ = await run_cli(fresh_database, "import", str(file))
    async with open_catalog(fresh_database) as books:
        stored = await books.list_all()

    assert status == 0, err
    assert "3 books read" in out
    assert "3 added" in out
    assert "3/3" in err  # the progress bar reached the end
    assert rerun_status == 0
    assert "0 added, 3 already in the catalog" in rerun_out
    assert sorted(stored, key=lambda b: b.title) == [
        Book(id=derived_book_id("Giovanni's Room", "James Baldwin"), title="Giovanni's Room",
             author="James Baldwin"),
        Book(id=given_id, title="Kindred", author="Octavia E. Butler"),
        Book(id=derived_book_id("Solaris", "Stanisław Lem"), title="Solaris",
             author="Stanisław Lem"),
    ]  # fmt: skip


async def test_import_reads_json_and_json_lines(
    fresh_database: str, open_catalog: OpenCatalog, tmp_path: Path
) -> None:
    array = tmp_path / "more.json"
    array.write_bytes(orjson.dumps([{"title": "Kindred", "author": "Octavia E. Butler"}]))
    lines = tmp_path / "more.jsonl"
    lines.write_bytes(b'{"title": "Solaris", "author": "Stanislaw Lem"}\n\n')

    results = [await run_cli(fresh_database, "import", str(f)) for f in (array, lines)]
    async with open_catalog(fresh_database) as books:
        titles = sorted(book.title for book in await books.list_all())

    assert [status for status, _, _ in results] == [0, 0]
    assert titles == ["Kindred", "Solaris"]


async def test_an_invalid_file_is_refused_whole_and_names_the_bad_record(
    fresh_database: str, open_catalog: OpenCatalog, tmp_path: Path
) -> None:
    file = tmp_path / "bad.csv"
    file.write_text("title,author\nKindred,Octavia E. Butler\nNo Author,\n", encoding="utf-8")

    status, _, err = await run_cli(fresh_database, "import", str(file))
    async with open_catalog(fresh_database) as books:
        stored = await books.list_all()

    assert status == 1
    assert f"{file}, line 3: author is required" in err
    assert stored == []  # the valid first line was not written either


async def test_the_imported_books_are_served(fresh_database: str, tmp_path: Path) -> None:
    file = tmp_path / "one.json"
    file.write_bytes(orjson.dumps({"books": [{"title": "Kindred", "author": "Octavia Butler"}]}))
    status, _, err = await run_cli(fresh_database, "import", str(file))
    assert status == 0, err

    port = free_port()
    server = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "books_graphql",
        env=service_environment(fresh_database, BOOKS_PORT=str(port), BOOKS_SEED_FILE=""),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        await _until_ready(f"http://127.0.0.1:{port}", server, tmp_path / "none.log")
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            response = await client.post("/", json={"query": "{ books { title author } }"})
    finally:
        server.terminate()
        await asyncio.wait_for(server.wait(), SUBPROCESS_TIMEOUT_S)

    assert response.json() == {
        "data": {"books": [{"title": "Kindred", "author": "Octavia Butler"}]}
    }


async def test_an_import_is_served_by_every_replica_as_soon_as_it_has_finished(
    two_replicas: list[str], fresh_database: str, tmp_path: Path
) -> None:
    # Both replicas keep the catalog in memory and replay answers (default settings); each
    # has answered this query, so each holds it, before the import.
    kindred = derived_book_id("Kindred", "Octavia Butler")
    query = {"query": f'{{ books {{ title }} book(id: "{kindred}") {{ title }} }}'}
    before = []
    for url in two_replicas:
        async with httpx.AsyncClient(base_url=url) as client:
            for _ in range(2):  # the second answer comes from the response cache
                before.append((await client.post("/graphql", json=query)).json()["data"])
    file = tmp_path / "kindred.json"
    file.write_bytes(orjson.dumps({"books": [{"title": "Kindred", "author": "Octavia Butler"}]}))

    status, _, err = await run_cli(fresh_database, "import", str(file))
    assert status == 0, err

    after = []
    for url in two_replicas:
        async with httpx.AsyncClient(base_url=url) as client:
            after.append((await client.post("/graphql", json=query)).json()["data"])
    assert all(answer["book"] is None for answer in before)
    assert all("Kindred" not in {b["title"] for b in answer["books"]} for answer in before)
    for answer in after:
        assert answer["book"] == {"title": "Kindred"}
        assert "Kindred" in {book["title"] for book in answer["books"]}
        assert len(answer["books"]) == SEED_COUNT + 1
