"""Endpoints have an audience: ``all`` (every event of their types) or ``owner`` (only the
events about their owner's own resources).

Written by makemigrations. One ``ALTER TABLE … ADD COLUMN … NOT NULL DEFAULT 'all'`` on
PostgreSQL and SQLite alike (adding a column does not rebuild an SQLite table): existing
endpoints, all registered by admins, keep receiving every event of their types, and so do
those that 1.1.0 replicas, which do not know the column, register during an upgrade.
"""

from tortoise import migrations
from tortoise.migrations import operations as ops
from webhooks_service.models import Audience
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('models', '0005_endpoint_failures')]

    initial = False

    operations = [
        ops.AddField(
            model_name='Endpoint',
            name='audience',
            field=fields.CharEnumField(default=Audience.ALL, description='ALL: all\nOWNER: owner', db_default='all', enum_type=Audience, max_length=16),
        ),
    ]
