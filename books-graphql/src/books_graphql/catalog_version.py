"""The catalog's version: one counter, bumped in the transaction of every change to books.

Every replica keeps the catalog in memory (plans.snapshot) and replays answers
(http.response_cache); both must follow an import finished on any machine. A one-row table is
the cheapest signal that works on SQLite and PostgreSQL alike: a writer bumps it in its own
transaction, so a reader that sees the new version also sees the new books; a reader checks
it with one primary-key read, at most every few milliseconds (``BOOKS_CATALOG_CHECK_MS``).
"""

from __future__ import annotations

from tortoise import connections
from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.expressions import F

from books_graphql import models

VERSION_ROW = 1
_READ = "SELECT version FROM catalog_version WHERE id = 1"  # VERSION_ROW


async def read_version() -> int:
    """The current version (0 for a catalog never changed since its migration)."""
    # Plain SQL: this runs every few milliseconds, the ORM's query building is not free.
    rows = await connections.get("default").execute_query_dict(_READ)
    return int(rows[0]["version"]) if rows else 0


async def bump_version(connection: BaseDBAsyncClient) -> None:
    """Mark the catalog changed; call inside the transaction that changed it."""
    await (
        models.CatalogVersion.filter(id=VERSION_ROW)
        .using_db(connection)
        .update(version=F("version") + 1)
    )
