"""webhooks-service application factory: the shared frame, the context and the routes."""

from __future__ import annotations

from api_shared.context import install_context
from api_shared.database import install_database
from api_shared.media import install_json_media_rules
from api_shared.service import create_service_app
from api_shared.types import App
from webhooks_service.context import Context, wire
from webhooks_service.database import database_config
from webhooks_service.routes import webhooks
from webhooks_service.settings import Settings


def create_app(settings: Settings | None = None, *, context: Context | None = None) -> App:
    """The webhooks API; ``context`` defaults to the parts ``wire`` builds from ``settings``."""
    settings = settings or Settings()
    context = context or wire(settings)
    app = create_service_app("webhooks-service", settings)
    install_json_media_rules(app)
    install_database(app, database_config(settings))
    install_context(app, context)
    app.blueprint(webhooks)
    return app
