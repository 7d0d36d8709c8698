"""webhooks-service application factory: the shared frame, the context and the routes."""

from __future__ import annotations

from api_shared.json_api import create_json_api_app
from api_shared.types import App
from webhooks_service.context import Context, wire
from webhooks_service.database import database_config
from webhooks_service.routes import webhooks
from webhooks_service.settings import Settings


def create_app(settings: Settings | None = None, *, context: Context | None = None) -> App:
    """The webhooks API; ``context`` defaults to the parts ``wire`` builds from ``settings``."""
    settings = settings or Settings()
    return create_json_api_app(
        "webhooks-service",
        settings,
        database=database_config(settings),
        context=context or wire(settings),
        routes=[webhooks],
    )
