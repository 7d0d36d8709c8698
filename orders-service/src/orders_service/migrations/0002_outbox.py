from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields
from tortoise.indexes import Index

class Migration(migrations.Migration):
    dependencies = [('models', '0001_initial')]

    initial = False

    operations = [
        ops.CreateModel(
            name='EventSequence',
            fields=[
                ('subject', fields.CharField(primary_key=True, unique=True, db_index=True, max_length=128)),
                ('last_sequence', fields.BigIntField()),
            ],
            options={'table': 'event_sequences', 'app': 'models', 'pk_attr': 'subject', 'table_description': "The last ``sequence`` given to a subject's events (it outlives purged outbox rows)."},
            bases=['Model'],
        ),
        ops.CreateModel(
            name='OutboxEvent',
            fields=[
                ('id', fields.BigIntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ('event_id', fields.CharField(unique=True, max_length=64)),
                ('type', fields.CharField(max_length=128)),
                ('subject', fields.CharField(max_length=128)),
                ('sequence', fields.BigIntField()),
                ('document', fields.TextField(unique=False)),
                ('created_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ('published_at', fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
            ],
            options={'table': 'outbox_events', 'app': 'models', 'unique_together': (('subject', 'sequence'),), 'indexes': [Index(fields=['published_at', 'id'], name='outbox_events_unpublished')], 'pk_attr': 'id', 'table_description': 'One event, written in the transaction of the change it describes, published later.'},
            bases=['Model'],
        ),
    ]
