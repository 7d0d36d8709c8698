"""The index of ``booksConnection``'s keyset pages: (title, id) in code-point order.

Written by hand: PostgreSQL compares text by the database's locale unless told otherwise,
SQLite by bytes; the index (and the page query, see ``repository.KEYSET_SQL``) uses the
"C" collation on PostgreSQL so that both order titles the same way, by code point.
"""

from typing import Any

from tortoise import migrations
from tortoise.migrations import operations as ops

INDEX = "books_title_id"
CREATE = {
    "postgres": f'CREATE INDEX {INDEX} ON books (title COLLATE "C", id)',
    "sqlite": f"CREATE INDEX {INDEX} ON books (title, id)",
}


async def create_index(apps: Any, schema_editor: Any) -> None:
    await schema_editor.client.execute_script(CREATE[schema_editor.client.capabilities.dialect])


async def drop_index(apps: Any, schema_editor: Any) -> None:
    await schema_editor.client.execute_script(f"DROP INDEX {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("models", "0002_catalog_version")]

    initial = False

    operations = [ops.RunPython(create_index, reverse_code=drop_index)]
