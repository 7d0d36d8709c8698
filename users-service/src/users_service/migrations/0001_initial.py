from tortoise import migrations
from tortoise.migrations import operations as ops
from api_shared.auth import Role
from uuid import uuid4
from tortoise import fields
from tortoise.indexes import Index

class Migration(migrations.Migration):
    initial = True

    operations = [
        ops.CreateModel(
            name='User',
            fields=[
                ('id', fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ('name', fields.CharField(max_length=100)),
                ('email', fields.CharField(null=True, unique=True, max_length=320)),
                ('password_hash', fields.CharField(null=True, max_length=255)),
                ('role', fields.CharEnumField(default=Role.CUSTOMER, description='CUSTOMER: customer\nADMIN: admin', enum_type=Role, max_length=16)),
                ('created_at', fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ('updated_at', fields.DatetimeField(auto_now=True, auto_now_add=False)),
            ],
            options={'table': 'users', 'app': 'models', 'indexes': [Index(fields=['created_at', 'id'], name='users_created_id'), Index(fields=['name', 'id'], name='users_name_id'), Index(fields=['role', 'created_at', 'id'], name='users_role_created_id'), Index(fields=['role', 'name', 'id'], name='users_role_name_id')], 'pk_attr': 'id'},
            bases=['Model'],
        ),
    ]
