from tortoise import migrations
from tortoise.migrations import operations as ops
from api_shared.auth import Role
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('models', '0001_initial')]

    initial = False

    operations = [
        ops.CreateModel(
            name='UserCount',
            fields=[
                ('role', fields.CharEnumField(primary_key=True, unique=True, db_index=True, description='CUSTOMER: customer\nADMIN: admin', enum_type=Role, max_length=16)),
                ('n', fields.BigIntField(default=0)),
            ],
            options={'table': 'user_counts', 'app': 'models', 'pk_attr': 'role', 'table_description': 'How many users have ``role``: one row per role, so an exact total costs O(1).'},
            bases=['Model'],
        ),
        # Data step (written by hand): one row per role, initialised from the existing users.
        # Plain SQL that SQLite and PostgreSQL both run; inside the migration's transaction.
        ops.RunSQL(
            [
                "INSERT INTO user_counts (role, n) "
                "SELECT 'customer', COUNT(*) FROM users WHERE role = 'customer'",
                "INSERT INTO user_counts (role, n) "
                "SELECT 'admin', COUNT(*) FROM users WHERE role = 'admin'",
            ],
            reverse_sql="DELETE FROM user_counts",
        ),
    ]
