"""``python -m books_graphql import FILE``: add books from a CSV, JSON or JSON Lines file."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path

from tortoise import Tortoise
from tortoise.exceptions import BaseORMException
from tqdm import tqdm  # type: ignore[import-untyped]  # tqdm ships no type information

from api_shared.commands import add_batch_options
from api_shared.logging import configure_logging
from books_graphql.book_files import FORMATS, BookFileError, read_books
from books_graphql.database import database_config
from books_graphql.repository import BookRepository
from books_graphql.services import DEFAULT_BATCH_SIZE, BookService, ImportReport
from books_graphql.settings import Settings


def import_command(argv: Sequence[str], settings: Settings | None = None) -> int:
    """Run the import; the exit status is 0 on success, 1 when nothing could be imported."""
    parser = argparse.ArgumentParser(
        prog="python -m books_graphql import",
        description=(
            "Add the books of a file to the catalog (BOOKS_DATABASE_URL). Formats, by suffix: "
            f"{', '.join(FORMATS)}; records are {{title, author, id?}} (CSV: a header row). "
            "Books already present (same id; without an id, same title and author) are left "
            "as they are, so an interrupted import can simply be run again."
        ),
    )
    parser.add_argument("file", type=Path)
    add_batch_options(parser, default_batch_size=DEFAULT_BATCH_SIZE)
    args = parser.parse_args(argv)
    if args.batch_size < 1:
        parser.error("--batch-size must be at least 1")
    settings = settings or Settings()
    configure_logging("books-graphql", settings.log_level)

    try:
        # A first pass validates every record, so a bad file writes nothing, and gives the
        # progress bar its total.
        total = sum(1 for _ in read_books(args.file))
    except BookFileError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    progress = None if args.progress is None else not args.progress
    try:
        report = asyncio.run(_import(settings, args.file, total, args.batch_size, progress))
    except BaseORMException as error:
        print(
            f"error: the catalog database refused the import ({error}); "
            "is it reachable and migrated (python -m books_graphql migrate)?",
            file=sys.stderr,
        )
        return 1
    print(
        f"{report.read} books read from {args.file}: {report.added} added, "
        f"{report.already_present} already in the catalog."
    )
    return 0


async def _import(
    settings: Settings, path: Path, total: int, batch_size: int, disable_progress: bool | None
) -> ImportReport:
    await Tortoise.init(config=database_config(settings))
    try:
        with tqdm(total=total, unit="book", disable=disable_progress, file=sys.stderr) as bar:
            return await BookService(BookRepository()).import_books(
                read_books(path), batch_size=batch_size, on_batch=bar.update
            )
    finally:
        await Tortoise.close_connections()
