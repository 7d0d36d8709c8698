"""webhooks-service's Tortoise configuration."""

from __future__ import annotations

from typing import Any

from api_shared.database import tortoise_config
from webhooks_service.settings import Settings


def database_config(settings: Settings) -> dict[str, Any]:
    return tortoise_config(
        settings.database_url, "webhooks_service.models", "webhooks_service.migrations"
    )
