"""orders-service application factory: the frame, the context and the routes."""

from __future__ import annotations

from api_shared.context import install_context
from api_shared.database import install_database
from api_shared.events.asyncapi import install_asyncapi, service_document
from api_shared.media import install_json_media_rules
from api_shared.service import create_service_app
from api_shared.types import App
from orders_service.context import Context, wire
from orders_service.database import database_config
from orders_service.events import CATALOG
from orders_service.routes import orders
from orders_service.settings import Settings


def create_app(settings: Settings | None = None, *, context: Context | None = None) -> App:
    """The orders app; parts not in ``context`` are built from ``settings`` (the environment)."""
    settings = settings or Settings()
    context = context or wire(settings)
    app = create_service_app("orders-service", settings)
    install_json_media_rules(app)
    install_database(app, database_config(settings))
    install_context(app, context)
    install_asyncapi(app, service_document("orders-service events", CATALOG))
    app.blueprint(orders)
    return app
