"""Endpoint secrets are stored sealed (longer than a plaintext one) and rotated with a grace.

Written by makemigrations, then ``secret``'s change of type made PostgreSQL's only: on
SQLite, Tortoise changes a column's type by copying the table and dropping the old one, and
with foreign keys on that drop deletes every delivery (ON DELETE CASCADE). SQLite does not
enforce a VARCHAR's length, so its column holds a sealed secret as it is.
"""

from typing import Any

from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields

class AlterColumnTypeOutsideSqlite(ops.AlterField):
    """``AlterField``, applied to the database except on SQLite (see above)."""

    async def database_forward(
        self, app_label: str, old_state: Any, new_state: Any, state_editor: Any = None
    ) -> None:
        if state_editor is not None and state_editor.client.capabilities.dialect == "sqlite":
            return
        await super().database_forward(app_label, old_state, new_state, state_editor)

    async def database_backward(
        self, app_label: str, old_state: Any, new_state: Any, state_editor: Any = None
    ) -> None:
        if state_editor is not None and state_editor.client.capabilities.dialect == "sqlite":
            return
        await super().database_backward(app_label, old_state, new_state, state_editor)


class Migration(migrations.Migration):
    dependencies = [('models', '0001_initial')]

    initial = False

    operations = [
        AlterColumnTypeOutsideSqlite(
            model_name='Endpoint',
            name='secret',
            field=fields.TextField(unique=False),
        ),
        ops.AddField(
            model_name='Endpoint',
            name='previous_secret',
            field=fields.TextField(null=True, unique=False),
        ),
        ops.AddField(
            model_name='Endpoint',
            name='previous_secret_until',
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
    ]
