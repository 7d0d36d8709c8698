from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise.fields.base import OnDelete
from uuid import uuid4
from tortoise import fields
from tortoise.indexes import Index

class Migration(migrations.Migration):
    dependencies = [('models', '0005_account_mail')]

    initial = False

    # A new table only: replicas of the previous release never name it and keep working.
    operations = [
        ops.CreateModel(
            name='ApiKey',
            fields=[
                ('id', fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ('user', fields.ForeignKeyField('models.User', source_field='user_id', db_constraint=True, to_field='id', related_name='api_keys', on_delete=OnDelete.CASCADE)),
                ('name', fields.CharField(max_length=100)),
                ('prefix', fields.CharField(max_length=12)),
                ('secret_hash', fields.CharField(unique=True, max_length=64)),
                ('scopes', fields.CharField(max_length=255)),
                ('created_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ('expires_at', fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ('last_used_at', fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
            ],
            options={'table': 'api_keys', 'app': 'models', 'indexes': [Index(fields=['user_id', 'created_at', 'id'], name='api_keys_user_created_id'), Index(fields=['user_id', 'last_used_at', 'id'], name='api_keys_user_used_id')], 'pk_attr': 'id', 'table_description': "A machine client's credential, stored only as the SHA-256 of the whole key."},
            bases=['Model'],
        ),
    ]
