from tortoise import migrations
from tortoise.migrations import operations as ops
from orjson import loads
from tortoise.fields.base import OnDelete
from tortoise.fields.data import JSON_DUMPS
from uuid import uuid4
from webhooks_service.models import DeliveryStatus
from tortoise import fields
from tortoise.indexes import Index

class Migration(migrations.Migration):
    initial = True

    operations = [
        ops.CreateModel(
            name='Endpoint',
            fields=[
                ('id', fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ('url', fields.CharField(max_length=2048)),
                ('event_types', fields.JSONField(encoder=JSON_DUMPS, decoder=loads)),
                ('description', fields.CharField(default='', max_length=500)),
                ('secret', fields.CharField(max_length=100)),
                ('created_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ('updated_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
            ],
            options={'table': 'webhook_endpoints', 'app': 'models', 'indexes': [Index(fields=['created_at', 'id'], name='webhook_endpoints_created_id')], 'pk_attr': 'id', 'table_description': 'A URL events are POSTed to, the types it wants, and the secret deliveries are signed with.'},
            bases=['Model'],
        ),
        ops.CreateModel(
            name='Delivery',
            fields=[
                ('id', fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ('endpoint', fields.ForeignKeyField('models.Endpoint', source_field='endpoint_id', db_constraint=True, to_field='id', related_name='deliveries', on_delete=OnDelete.CASCADE)),
                ('event_id', fields.CharField(max_length=255)),
                ('event_type', fields.CharField(max_length=255)),
                ('subject', fields.CharField(max_length=255)),
                ('stream', fields.CharField(max_length=64)),
                ('stream_sequence', fields.BigIntField()),
                ('payload', fields.TextField(unique=False)),
                ('status', fields.CharEnumField(default=DeliveryStatus.PENDING, description='PENDING: pending\nDELIVERED: delivered\nFAILED: failed', enum_type=DeliveryStatus, max_length=16)),
                ('attempt_count', fields.IntField(default=0)),
                ('failures', fields.IntField(default=0)),
                ('next_attempt_at', fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ('claim', fields.UUIDField(null=True)),
                ('created_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ('updated_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
            ],
            options={'table': 'webhook_deliveries', 'app': 'models', 'unique_together': (('endpoint_id', 'event_id'),), 'indexes': [Index(fields=['status', 'next_attempt_at'], name='webhook_deliveries_due'), Index(fields=['endpoint_id', 'subject', 'stream', 'stream_sequence'], name='webhook_deliveries_order'), Index(fields=['endpoint_id', 'created_at', 'id'], name='webhook_deliveries_listed')], 'pk_attr': 'id', 'table_description': 'One event for one endpoint: the durable queue the dispatcher works from.'},
            bases=['Model'],
        ),
        ops.CreateModel(
            name='Attempt',
            fields=[
                ('id', fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ('delivery', fields.ForeignKeyField('models.Delivery', source_field='delivery_id', db_constraint=True, to_field='id', related_name='attempts', on_delete=OnDelete.CASCADE)),
                ('attempted_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ('status_code', fields.IntField(null=True)),
                ('error', fields.CharField(null=True, max_length=500)),
                ('duration_ms', fields.IntField()),
            ],
            options={'table': 'webhook_attempts', 'app': 'models', 'indexes': [Index(fields=['delivery_id', 'attempted_at'], name='webhook_attempts_of')], 'pk_attr': 'id', 'table_description': 'One POST of a delivery: the status answered (or the error), and how long it took.'},
            bases=['Model'],
        ),
    ]
