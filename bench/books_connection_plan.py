"""The plans of booksConnection's page query at 100,000 books on PostgreSQL.

    TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        uv run --frozen python bench/books_connection_plan.py [--books 100000]

Creates a fresh database on that server (dropped afterwards), migrates it as books-graphql
does, loads the books with COPY, ANALYZEs, then EXPLAIN ANALYZEs the exact statements of
``BookRepository.page_after`` (``repository.KEYSET_SQL``) for the first page, a page from the
middle and the last page, 100 books each (plus the one that says whether more follow).
Prints Markdown for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import uuid

import asyncpg
from tortoise.context import TortoiseContext

from api_shared.database import migrate
from api_testkit.databases import TEST_DATABASE_ENV, temporary_database
from books_graphql.database import database_config
from books_graphql.repository import KEYSET_SQL
from books_graphql.settings import Settings

PAGE = 100
WORDS = ["alpha", "Beta", "gamma", "Émile", "zeta", "Ωmega", "delta", "ärger", "Zoo", "river"]


def books(count: int) -> list[tuple[uuid.UUID, str, str]]:
    rng = random.Random(100)  # noqa: S311 - a catalog shape, not a secret: same every run
    return [
        (
            uuid.UUID(int=rng.getrandbits(128), version=4),
            f"{rng.choice(WORDS)} {rng.choice(WORDS)} {rng.randrange(10_000)}",
            f"Author {rng.randrange(5_000)}",
        )
        for _ in range(count)
    ]


async def plans(count: int) -> dict[str, list[str]]:
    async with temporary_database("books-plan") as url:
        async with TortoiseContext():
            await migrate(database_config(Settings(database_url=url)))
        connection = await asyncpg.connect(url.replace("postgres://", "postgresql://", 1))
        try:
            await connection.copy_records_to_table(
                "books", records=books(count), columns=["id", "title", "author"]
            )
            await connection.execute("VACUUM ANALYZE books")
            positions = await connection.fetch(
                'SELECT title, id FROM books ORDER BY title COLLATE "C", id '
                "OFFSET $1 LIMIT 1",  # only to pick the cursors explained below
                count // 2,
            )
            last = await connection.fetch(
                'SELECT title, id FROM books ORDER BY title COLLATE "C" DESC, id DESC '
                "OFFSET $1 LIMIT 1",
                PAGE - 1,
            )
            statements = KEYSET_SQL["postgres"]
            cases = {
                "first page": (statements["first"], [PAGE + 1]),
                f"a page after book {count // 2:,}": (
                    statements["after"],
                    [positions[0]["title"], positions[0]["id"], PAGE + 1],
                ),
                "the last page": (statements["after"], [last[0]["title"], last[0]["id"], PAGE + 1]),
            }
            explained = {}
            for case, (sql, parameters) in cases.items():
                await connection.fetch(sql, *parameters)  # warm, as the previous page would be
                rows = await connection.fetch(
                    f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {sql}", *parameters
                )
                explained[case] = [row[0] for row in rows]
            return explained
        finally:
            await connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--books", type=int, default=100_000)
    args = parser.parse_args()
    if not os.environ.get(TEST_DATABASE_ENV, "").startswith("postgres"):
        parser.error(f"{TEST_DATABASE_ENV} must name a PostgreSQL server")
    for case, lines in asyncio.run(plans(args.books)).items():
        print(f"- {case}:\n\n  ```")
        print("\n".join(f"  {line}" for line in lines))
        print("  ```")


if __name__ == "__main__":
    main()
