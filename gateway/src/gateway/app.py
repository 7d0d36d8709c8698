"""Gateway application factory: the shared frame, the context, the admin port and the routes."""

from __future__ import annotations

from api_shared.context import install_context
from api_shared.service_app import create_service_app
from api_shared.types import App
from gateway import routes
from gateway.admin import install_admin_port
from gateway.context import Context, wire
from gateway.cors import install_cors
from gateway.metrics import install_gateway_metrics
from gateway.settings import Settings


def create_app(settings: Settings | None = None, *, context: Context | None = None) -> App:
    """The gateway; ``context`` defaults to the parts ``wire`` builds from ``settings``."""
    settings = settings or Settings()
    context = context or wire(settings)
    app = create_service_app("gateway", settings, edge=True, metric_labels=("upstream",))
    install_gateway_metrics(app, context.metrics)
    install_cors(app, context.cors_origins)
    install_context(app, context)
    admin = install_admin_port(app, context)
    app.blueprint(routes.public)
    admin.blueprint(routes.admin)

    async def end_streams(app: App) -> None:
        # Before the server drains: an open stream would hold it for the whole grace period.
        # Each ends cleanly; its client reconnects, to another replica, with Last-Event-ID.
        context.streams.end_all()

    app.register_listener(end_streams, "before_server_stop")
    return app
