"""Endpoints record who created them and the admin answerable for them, and may be disabled.

Endpoints registered before this migration get ``created_by`` and ``owner_id`` null (nobody
is known to have made them) and stay enabled (``enabled`` defaults to true in the database
too): no admin's loss of the role disables them, until an admin enables one explicitly and
becomes its owner (docs/api.md#webhooks).
"""

from tortoise import migrations
from tortoise.migrations import operations as ops
from webhooks_service.models import DisabledReason
from tortoise import fields
from tortoise.indexes import Index

class Migration(migrations.Migration):
    dependencies = [('models', '0002_sealed_secrets')]

    initial = False

    operations = [
        ops.AddField(
            model_name='Endpoint',
            name='created_by',
            field=fields.CharField(null=True, max_length=255),
        ),
        ops.AddField(
            model_name='Endpoint',
            name='disabled_at',
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        ops.AddField(
            model_name='Endpoint',
            name='disabled_reason',
            field=fields.CharEnumField(null=True, description='OWNER_NOT_ADMIN: owner-not-admin\nOWNER_SUSPENDED: owner-suspended\nOWNER_DELETED: owner-deleted\nBY_ADMIN: by-admin', enum_type=DisabledReason, max_length=32),
        ),
        ops.AddField(
            model_name='Endpoint',
            name='enabled',
            field=fields.BooleanField(default=True, db_default=True),
        ),
        ops.AddField(
            model_name='Endpoint',
            name='owner_id',
            field=fields.CharField(null=True, max_length=255),
        ),
        ops.AddIndex(
            model_name='Endpoint',
            index=Index(fields=['owner_id'], name='webhook_endpoints_owner'),
        ),
    ]
