"""users-service's Tortoise configuration."""

from __future__ import annotations

from typing import Any

from api_shared.database import tortoise_config
from users_service.settings import Settings

MIGRATIONS = "users_service.migrations"


def database_config(settings: Settings) -> dict[str, Any]:
    return tortoise_config(settings.database_url, "users_service.models", MIGRATIONS)
