"""The database schema comes from migrations, and the migrations match the models."""

from __future__ import annotations

import httpx
from tortoise import Tortoise
from tortoise.migrations.autodetector import MigrationAutodetector

from orders_service.database import database_config
from orders_service.settings import Settings


async def test_the_committed_migrations_leave_no_model_change_unmigrated(
    settings: Settings, client: httpx.AsyncClient
) -> None:
    apps = database_config(settings)["apps"]

    changes = await MigrationAutodetector(Tortoise.apps, apps).changes()

    assert [writer.operations for writer in changes] == []


async def test_the_service_is_ready_on_its_migrated_database(client: httpx.AsyncClient) -> None:
    response = await client.get("/ready")

    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", "schema": "ok"}
