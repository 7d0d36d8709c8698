from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('models', '0001_initial')]

    initial = False

    operations = [
        ops.AlterField(
            model_name='Endpoint',
            name='secret',
            field=fields.TextField(unique=False),
        ),
        ops.AddField(
            model_name='Endpoint',
            name='previous_secret',
            field=fields.TextField(null=True, unique=False),
        ),
        ops.AddField(
            model_name='Endpoint',
            name='previous_secret_until',
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
    ]
