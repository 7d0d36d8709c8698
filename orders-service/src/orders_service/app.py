"""orders-service application factory."""

from __future__ import annotations

from api_shared.database import install_database
from api_shared.media import install_json_media_rules
from api_shared.service import create_service_app
from api_shared.types import App
from orders_service.database import database_config
from orders_service.settings import Settings


def create_app(settings: Settings | None = None) -> App:
    settings = settings or Settings()
    app = create_service_app("orders-service", settings)
    install_json_media_rules(app)
    install_database(app, database_config(settings))
    return app
