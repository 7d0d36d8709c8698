"""Endpoints may be disabled because their account was claimed (``account-claimed``).

Written by hand after 0005's ``StateOnly``: only the field's description changes (a
CharEnumField has no constraint, and ``account-claimed`` fits its 32 characters), so the
change is recorded in the migrations' state and not applied. Replicas of the version before
run beside this one unchanged: they never write the new value, and read it only from an
endpoint this version disabled (their enum would refuse it, as it refused ``failing`` before
0005).
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
    dependencies = [('models', '0007_event_log')]

    initial = False

    operations = [
        StateOnly(
            model_name='Endpoint',
            name='disabled_reason',
            field=fields.CharEnumField(null=True, description='OWNER_NOT_ADMIN: owner-not-admin\nOWNER_SUSPENDED: owner-suspended\nOWNER_DELETED: owner-deleted\nACCOUNT_CLAIMED: account-claimed\nBY_ADMIN: by-admin\nFAILING: failing', enum_type=DisabledReason, max_length=32),
        ),
    ]
