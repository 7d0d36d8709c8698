"""users-service application factory: the frame, the context and the routes."""

from __future__ import annotations

from api_shared.json_api import create_json_api_app
from api_shared.types import App
from users_service.account_mail import accounts
from users_service.api_keys import api_keys
from users_service.context import Context, wire
from users_service.database import database_config
from users_service.sessions import auth, jwks
from users_service.settings import Settings
from users_service.users import CATALOG, users


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
