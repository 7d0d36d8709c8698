"""orders-service's Tortoise configuration."""

from __future__ import annotations

from typing import Any

from api_shared.database import tortoise_config
from orders_service.settings import Settings


def database_config(settings: Settings) -> dict[str, Any]:
    return tortoise_config(
        settings.database_url, "orders_service.models", "orders_service.migrations"
    )
