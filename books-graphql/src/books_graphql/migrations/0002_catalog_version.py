from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('models', '0001_initial')]

    initial = False

    operations = [
        ops.CreateModel(
            name='CatalogVersion',
            fields=[
                ('id', fields.IntField(primary_key=True, unique=True, db_index=True)),
                ('version', fields.BigIntField(default=0)),
            ],
            options={'table': 'catalog_version', 'app': 'models', 'pk_attr': 'id'},
            bases=['Model'],
        ),
        # Data step (written by hand): the single row, so readers never see an empty table.
        ops.RunSQL(
            ["INSERT INTO catalog_version (id, version) VALUES (1, 0)"],
            reverse_sql="DELETE FROM catalog_version",
        ),
    ]
