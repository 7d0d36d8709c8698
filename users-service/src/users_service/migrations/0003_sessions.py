from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise.fields.base import OnDelete
from uuid import uuid4
from tortoise import fields
from tortoise.indexes import Index

from users_service.migration_ops import AddColumnWithDatabaseDefault


class Migration(migrations.Migration):
    dependencies = [('models', '0002_user_counts')]

    initial = False

    operations = [
        ops.CreateModel(
            name='Session',
            fields=[
                ('id', fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ('user', fields.ForeignKeyField('models.User', source_field='user_id', db_constraint=True, to_field='id', related_name='sessions', on_delete=OnDelete.CASCADE)),
                ('created_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ('last_used_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ('expires_at', fields.DatetimeField(db_index=True, auto_now=False, auto_now_add=False)),
                ('revoked_at', fields.DatetimeField(null=True, db_index=True, auto_now=False, auto_now_add=False)),
                ('user_agent', fields.CharField(null=True, max_length=255)),
                ('address', fields.CharField(null=True, max_length=45)),
            ],
            options={'table': 'sessions', 'app': 'models', 'indexes': [Index(fields=['user_id', 'created_at', 'id'], name='sessions_user_created_id'), Index(fields=['user_id', 'last_used_at', 'id'], name='sessions_user_used_id')], 'pk_attr': 'id', 'table_description': 'A login and every refresh that followed it (a refresh-token family, RFC 9700 §4.14).'},
            bases=['Model'],
        ),
        ops.CreateModel(
            name='RefreshToken',
            fields=[
                ('token_hash', fields.CharField(primary_key=True, unique=True, db_index=True, max_length=64)),
                ('session', fields.ForeignKeyField('models.Session', source_field='session_id', db_index=True, db_constraint=True, to_field='id', related_name='tokens', on_delete=OnDelete.CASCADE)),
                ('created_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ('expires_at', fields.DatetimeField(db_index=True, auto_now=False, auto_now_add=False)),
                ('spent_at', fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
            ],
            options={'table': 'refresh_tokens', 'app': 'models', 'pk_attr': 'token_hash', 'table_description': 'One refresh token of a session, stored only as the SHA-256 of the token.'},
            bases=['Model'],
        ),
        AddColumnWithDatabaseDefault(
            model_name='User',
            name='is_active',
            field=fields.BooleanField(default=True),
            # Plain SQL that SQLite and PostgreSQL both run: existing users are active.
            sql='ALTER TABLE "users" ADD COLUMN "is_active" BOOLEAN NOT NULL DEFAULT TRUE',
            reverse_sql='ALTER TABLE "users" DROP COLUMN "is_active"',
        ),
        # Written by hand: suspended users are few, so an index of them alone (partial; SQLite
        # and PostgreSQL both have them) makes `isActive=false` pages and totals cheap.
        ops.RunSQL(
            "CREATE INDEX users_inactive_role_created_id ON users (role, created_at, id) "
            "WHERE NOT is_active",
            reverse_sql="DROP INDEX users_inactive_role_created_id",
        ),
    ]
