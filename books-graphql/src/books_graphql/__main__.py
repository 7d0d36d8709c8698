"""``python -m books_graphql``."""

from __future__ import annotations

from api_shared.runner import run_service
from books_graphql.app import create_app
from books_graphql.settings import Settings


def main() -> None:
    run_service("books-graphql", Settings, create_app)


if __name__ == "__main__":
    main()
