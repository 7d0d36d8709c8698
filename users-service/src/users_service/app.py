"""users-service application factory: the frame, the context and the routes."""

from __future__ import annotations

from api_shared.context import install_context
from api_shared.database import install_database
from api_shared.events.asyncapi import install_asyncapi, service_document
from api_shared.media import install_json_media_rules
from api_shared.service import create_service_app
from api_shared.types import App
from users_service.context import Context, wire
from users_service.database import database_config
from users_service.events import CATALOG
from users_service.routes import auth, jwks, users
from users_service.settings import Settings


def create_app(settings: Settings | None = None, *, context: Context | None = None) -> App:
    """users-service; ``context`` defaults to the parts ``wire`` builds from ``settings``."""
    settings = settings or Settings()
    context = context or wire(settings)
    app = create_service_app("users-service", settings)
    app.config.REQUEST_MAX_SIZE = settings.body_limit
    install_json_media_rules(app)
    install_database(app, database_config(settings))
    install_context(app, context)
    install_asyncapi(app, service_document("users-service events", CATALOG))
    app.blueprint(users)
    app.blueprint(auth)
    app.blueprint(jwks)
    return app
