from tortoise import migrations
from tortoise.migrations import operations as ops
from uuid import uuid4
from tortoise import fields

class Migration(migrations.Migration):
    initial = True

    operations = [
        ops.CreateModel(
            name='Book',
            fields=[
                ('id', fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ('title', fields.CharField(max_length=500)),
                ('author', fields.CharField(max_length=300)),
            ],
            options={'table': 'books', 'app': 'models', 'pk_attr': 'id'},
            bases=['Model'],
        ),
    ]
