"""Endpoints record since when their deliveries fail, and may be disabled for it.

Written by makemigrations, with ``StateOnly`` added by hand. ``failing_since`` is a nullable
column without a default of its own, so the database fills existing rows with NULL: no
endpoint is failing until its next failed attempt (docs/api.md#delivery).
``disabled_reason`` takes ``failing``: only the field's description changes (a CharEnumField
has no constraint), so that change is recorded in the migrations' state and not applied. On
SQLite, altering a column rebuilds the table, and dropping the old ``webhook_endpoints``
would cascade to every delivery.
"""

from typing import Any

from tortoise import migrations
from tortoise.migrations import operations as ops
from webhooks_service.models import DisabledReason
from tortoise import fields


class StateOnly(ops.AlterField):
    """An AlterField the database has nothing to do for."""

    async def database_forward(self, *args: Any, **kwargs: Any) -> None:
        return None

    async def database_backward(self, *args: Any, **kwargs: Any) -> None:
        return None


class Migration(migrations.Migration):
    dependencies = [('models', '0004_personal_data')]

    initial = False

    operations = [
        StateOnly(
            model_name='Endpoint',
            name='disabled_reason',
            field=fields.CharEnumField(null=True, description='OWNER_NOT_ADMIN: owner-not-admin\nOWNER_SUSPENDED: owner-suspended\nOWNER_DELETED: owner-deleted\nBY_ADMIN: by-admin\nFAILING: failing', enum_type=DisabledReason, max_length=32),
        ),
        ops.AddField(
            model_name='Endpoint',
            name='failing_since',
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
    ]
