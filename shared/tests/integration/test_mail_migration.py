"""``mail_outbox_operations`` creates the table ``OutboxMail`` describes: a service whose
migration applies them has no model change left unmigrated."""

from __future__ import annotations

from pathlib import Path

import pytest
from tortoise import Tortoise
from tortoise.context import TortoiseContext
from tortoise.migrations.autodetector import MigrationAutodetector

from api_shared.database import migrate, tortoise_config
from api_testkit.databases import temporary_database

MIGRATION = """\
from tortoise import migrations

from api_shared.mail.migration import mail_outbox_operations


class Migration(migrations.Migration):
    initial = True

    operations = mail_outbox_operations()
"""


async def test_the_mail_outbox_operations_match_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "mail_service_migrations"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "0001_initial.py").write_text(MIGRATION)
    monkeypatch.syspath_prepend(str(tmp_path))

    async with temporary_database("mail-migration") as url:
        config = tortoise_config(url, "api_shared.mail.models", "mail_service_migrations")
        async with TortoiseContext():
            await migrate(config)
        async with TortoiseContext():
            await Tortoise.init(config=config)
            try:
                changes = await MigrationAutodetector(Tortoise.apps, config["apps"]).changes()
            finally:
                await Tortoise.close_connections()

    assert [writer.operations for writer in changes] == []
