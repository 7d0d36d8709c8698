from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise.fields.base import OnDelete
from tortoise import fields
from tortoise.indexes import Index

from api_shared.mail.migration import mail_outbox_operations
from users_service.migration_ops import AddColumnWithDatabaseDefault


class Migration(migrations.Migration):
    dependencies = [('models', '0004_outbox')]

    initial = False

    operations = [
        AddColumnWithDatabaseDefault(
            model_name='User',
            name='email_verified',
            field=fields.BooleanField(default=False),
            # Existing users have proven nothing yet; replicas of the previous release insert
            # users without the column, so the database gives it its value.
            sql='ALTER TABLE "users" ADD COLUMN "email_verified" BOOLEAN NOT NULL DEFAULT FALSE',
            reverse_sql='ALTER TABLE "users" DROP COLUMN "email_verified"',
        ),
        ops.CreateModel(
            name='AccountToken',
            fields=[
                ('token_hash', fields.CharField(primary_key=True, unique=True, db_index=True, max_length=64)),
                ('user', fields.ForeignKeyField('models.User', source_field='user_id', db_constraint=True, to_field='id', related_name='account_tokens', on_delete=OnDelete.CASCADE)),
                ('purpose', fields.CharField(max_length=32)),
                ('email', fields.CharField(max_length=320)),
                ('created_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ('expires_at', fields.DatetimeField(db_index=True, auto_now=False, auto_now_add=False)),
                ('used_at', fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
            ],
            options={'table': 'account_tokens', 'app': 'models', 'indexes': [Index(fields=['user_id', 'purpose', 'created_at'], name='account_tokens_user'), Index(fields=['email', 'purpose', 'created_at'], name='account_tokens_email')], 'pk_attr': 'token_hash', 'table_description': 'A single-use token mailed to a user: an email verification or a password reset.'},
            bases=['Model'],
        ),
        ops.CreateModel(
            name='PasswordResetRequest',
            fields=[
                ('id', fields.BigIntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ('email', fields.CharField(max_length=320)),
                ('created_at', fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ('handled_at', fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
            ],
            options={'table': 'password_reset_requests', 'app': 'models', 'indexes': [Index(fields=['handled_at', 'id'], name='password_reset_requests_pending')], 'pk_attr': 'id', 'table_description': 'A ``POST /api/password-reset-requests``, queued.'},
            bases=['Model'],
        ),
        # The mail outbox's table, as the shared package that owns its model writes it.
        *mail_outbox_operations(),
    ]
