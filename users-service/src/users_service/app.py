"""users-service application factory: the frame, the context and the routes."""

from __future__ import annotations

from api_shared.json_api import create_json_api_app
from api_shared.types import App
from users_service.context import Context, wire
from users_service.database import database_config
from users_service.events import CATALOG
from users_service.routes import accounts, api_keys, auth, jwks, users
from users_service.settings import Settings


def create_app(settings: Settings | None = None, *, context: Context | None = None) -> App:
    """users-service; ``context`` defaults to the parts ``wire`` builds from ``settings``."""
    settings = settings or Settings()
    app = create_json_api_app(
        "users-service",
        settings,
        database=database_config(settings),
        context=context or wire(settings),
        routes=[users, auth, accounts, api_keys, jwks],
        events=CATALOG,
    )
    app.config.REQUEST_MAX_SIZE = settings.body_limit  # its own limit, under the platform's
    return app
