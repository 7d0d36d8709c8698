"""``python -m books_graphql [serve|migrate|makemigrations|import FILE]``."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from api_shared.runner import run_service
from books_graphql.app import create_app
from books_graphql.cli import import_command
from books_graphql.database import database_config
from books_graphql.settings import Settings


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["import"]:
        raise SystemExit(import_command(args[1:]))
    run_service(
        "books-graphql",
        Settings,
        create_app,
        database_config,
        args,
        extra_commands={"import": "add books from a CSV, JSON or JSON Lines file (import -h)"},
    )


if __name__ == "__main__":
    main()
