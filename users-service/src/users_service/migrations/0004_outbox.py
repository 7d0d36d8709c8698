from tortoise import migrations

from api_shared.events.migration import outbox_operations


class Migration(migrations.Migration):
    dependencies = [('models', '0003_sessions')]

    initial = False

    # The outbox's tables, as the shared package that owns their models writes them.
    operations = outbox_operations()
