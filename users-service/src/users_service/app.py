"""users-service application factory: the frame, the context and the routes."""

from __future__ import annotations

from api_shared.auth import install_authentication
from api_shared.context import install_context
from api_shared.database import install_database
from api_shared.events.asyncapi import install_asyncapi, service_document
from api_shared.events.runtime import relay_readings
from api_shared.media import install_json_media_rules
from api_shared.metrics import register_readings
from api_shared.service import create_service_app
from api_shared.types import App
from users_service.admin_bootstrap import install_admin_bootstrap
from users_service.budgets import throttle_readings
from users_service.context import Context, wire
from users_service.database import database_config
from users_service.events import CATALOG
from users_service.passwords import password_slot_readings
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
    install_authentication(app, context.verifier)
    install_context(app, context)
    register_readings(app.ctx.metrics_registry, password_slot_readings(context.passwords))
    register_readings(app.ctx.metrics_registry, throttle_readings(context.throttle))
    if context.events is not None:
        register_readings(app.ctx.metrics_registry, relay_readings(context.events.relay))
    install_asyncapi(app, service_document("users-service events", CATALOG))
    install_admin_bootstrap(app, context)
    app.blueprint(users)
    app.blueprint(auth)
    app.blueprint(jwks)
    return app
