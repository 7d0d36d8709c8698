from tortoise import migrations
from tortoise.migrations import operations as ops
from orders_service.models import IdempotencyState, OrderStatus
from orjson import loads
from tortoise.fields.data import JSON_DUMPS
from uuid import uuid4
from tortoise import fields
from tortoise.indexes import Index

class Migration(migrations.Migration):
    initial = True

    operations = [
        ops.CreateModel(
            name='IdempotencyRecord',
            fields=[
                ('id', fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ('user_id', fields.UUIDField()),
                ('key', fields.CharField(max_length=255)),
                ('fingerprint', fields.CharField(max_length=64)),
                ('state', fields.CharEnumField(description='IN_PROGRESS: in_progress\nCOMPLETED: completed', enum_type=IdempotencyState, max_length=16)),
                ('claim_token', fields.UUIDField()),
                ('claimed_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ('created_at', fields.DatetimeField(db_index=True, auto_now=False, auto_now_add=False)),
                ('response_status', fields.IntField(null=True)),
                ('response_body', fields.TextField(null=True, unique=False)),
                ('response_headers', fields.JSONField(null=True, encoder=JSON_DUMPS, decoder=loads)),
            ],
            options={'table': 'idempotency_records', 'app': 'models', 'unique_together': (('user_id', 'key'),), 'pk_attr': 'id', 'table_description': 'One ``Idempotency-Key`` of one user: its claim while running, then the stored response.'},
            bases=['Model'],
        ),
        ops.CreateModel(
            name='Order',
            fields=[
                ('id', fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ('user_id', fields.UUIDField()),
                ('status', fields.CharEnumField(default=OrderStatus.PENDING, description='PENDING: pending\nCONFIRMED: confirmed\nSHIPPED: shipped\nDELIVERED: delivered\nCANCELLED: cancelled', enum_type=OrderStatus, max_length=16)),
                ('items', fields.JSONField(encoder=JSON_DUMPS, decoder=loads)),
                ('note', fields.CharField(null=True, max_length=500)),
                ('version', fields.IntField(default=1)),
                ('created_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ('updated_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
            ],
            options={'table': 'orders', 'app': 'models', 'indexes': [Index(fields=['created_at', 'id'], name='orders_created_id'), Index(fields=['updated_at', 'id'], name='orders_updated_id'), Index(fields=['user_id', 'created_at', 'id'], name='orders_user_created_id'), Index(fields=['user_id', 'updated_at', 'id'], name='orders_user_updated_id'), Index(fields=['status', 'created_at', 'id'], name='orders_status_created_id'), Index(fields=['status', 'updated_at', 'id'], name='orders_status_updated_id'), Index(fields=['user_id', 'status', 'created_at', 'id'], name='orders_user_status_created_id'), Index(fields=['user_id', 'status', 'updated_at', 'id'], name='orders_user_status_updated_id')], 'pk_attr': 'id', 'table_description': 'One order.'},
            bases=['Model'],
        ),
    ]
