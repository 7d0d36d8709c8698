"""orders-service application factory: the frame, the context and the routes."""

from __future__ import annotations

from api_shared.json_api import create_json_api_app
from api_shared.types import App
from orders_service.context import Context, wire
from orders_service.database import database_config
from orders_service.events import CATALOG
from orders_service.routes import orders
from orders_service.settings import Settings


def create_app(settings: Settings | None = None, *, context: Context | None = None) -> App:
    """The orders app; parts not in ``context`` are built from ``settings`` (the environment)."""
    settings = settings or Settings()
    return create_json_api_app(
        "orders-service",
        settings,
        database=database_config(settings),
        context=context or wire(settings),
        routes=[orders],
        events=CATALOG,
    )
