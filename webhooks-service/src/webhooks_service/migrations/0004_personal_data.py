"""Deliveries record whose personal data they carry; deleted users are remembered a while.

Written by makemigrations, with ``record_concerned_users`` added by hand: the deliveries
stored before it get their ``user_id`` from their own payload (``personal_data``), so that
deleting a user redacts those too; the retention purge removes them all within
WEBHOOK_DELIVERY_RETENTION_S anyway.
"""

from typing import Any

import orjson

from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields
from tortoise.indexes import Index

from webhooks_service.personal_data import concerned_user

BATCH = 500


def _placeholders(dialect: str, count: int) -> list[str]:
    return ["?"] * count if dialect == "sqlite" else [f"${n}" for n in range(1, count + 1)]


async def record_concerned_users(apps: Any, schema_editor: Any) -> None:
    client = schema_editor.client
    dialect = client.capabilities.dialect
    after, (first,) = "", _placeholders(dialect, 1)
    select = (
        "SELECT id, event_type, subject, payload FROM webhook_deliveries"
        f" WHERE CAST(id AS TEXT) > {first} ORDER BY CAST(id AS TEXT) LIMIT {BATCH}"
    )
    user, delivery = _placeholders(dialect, 2)
    update = f"UPDATE webhook_deliveries SET user_id = {user} WHERE id = {delivery}"
    while True:
        _, rows = await client.execute_query(select, [after])
        for row in rows:
            try:
                document = orjson.loads(row["payload"])
            except orjson.JSONDecodeError:
                continue
            found = concerned_user(row["event_type"], row["subject"], document if isinstance(document, dict) else {})
            if found is not None:
                await client.execute_query(update, [found, row["id"]])
        if len(rows) < BATCH:
            return
        after = str(rows[-1]["id"])

class Migration(migrations.Migration):
    dependencies = [('models', '0003_endpoint_owners')]

    initial = False

    operations = [
        ops.CreateModel(
            name='ErasedUser',
            fields=[
                ('user_id', fields.CharField(primary_key=True, unique=True, db_index=True, max_length=255)),
                ('erased_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
            ],
            options={'table': 'webhook_erased_users', 'app': 'models', 'pk_attr': 'user_id', 'table_description': 'A user users-service deleted: events about them that arrive later are stored redacted'},
            bases=['Model'],
        ),
        ops.AddField(
            model_name='Delivery',
            name='user_id',
            field=fields.CharField(null=True, max_length=255),
        ),
        ops.AddIndex(
            model_name='Delivery',
            index=Index(fields=['user_id'], name='webhook_deliveries_user'),
        ),
        ops.AddIndex(
            model_name='Delivery',
            index=Index(fields=['created_at'], name='webhook_deliveries_created'),
        ),
        ops.RunPython(record_concerned_users, reverse_code=ops.RunPython.noop),
    ]
