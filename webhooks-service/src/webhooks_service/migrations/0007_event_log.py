"""The event log (``GET /api/events``): every event the dispatcher takes in, once.

Written by makemigrations. A new table only: 1.1.0 replicas running beside this version
during an upgrade never touch it (their dispatchers do not fill it, so the log starts with
the events this version's dispatchers take in).
"""

from tortoise import migrations
from tortoise.migrations import operations as ops
from uuid import uuid4
from tortoise import fields
from tortoise.indexes import Index

class Migration(migrations.Migration):
    dependencies = [('models', '0006_endpoint_audience')]

    initial = False

    operations = [
        ops.CreateModel(
            name='LoggedEvent',
            fields=[
                ('id', fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ('position', fields.BigIntField(unique=True)),
                ('event_id', fields.CharField(unique=True, max_length=255)),
                ('type', fields.CharField(max_length=255)),
                ('subject', fields.CharField(max_length=255)),
                ('user_id', fields.CharField(null=True, max_length=255)),
                ('stream', fields.CharField(max_length=64)),
                ('stream_sequence', fields.BigIntField()),
                ('time', fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ('payload', fields.TextField(unique=False)),
                ('recorded_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
            ],
            options={'table': 'webhook_event_log', 'app': 'models', 'indexes': [Index(fields=['user_id', 'time', 'id'], name='webhook_event_log_user_time'), Index(fields=['time', 'id'], name='webhook_event_log_time'), Index(fields=['type'], name='webhook_event_log_type'), Index(fields=['subject'], name='webhook_event_log_subject'), Index(fields=['recorded_at'], name='webhook_event_log_recorded')], 'pk_attr': 'id', 'table_description': 'One event the platform published (or webhooks-service made), kept for the event log'},
            bases=['Model'],
        ),
    ]
