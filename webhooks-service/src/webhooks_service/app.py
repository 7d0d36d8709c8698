"""webhooks-service application factory: the shared frame, the context and the routes of
the endpoint API and the event log."""

from __future__ import annotations

from api_shared.json_api import create_json_api_app
from api_shared.types import App
from webhooks_service.context import Context, wire
from webhooks_service.database import database_config
from webhooks_service.endpoints import EndpointsContext, webhooks
from webhooks_service.event_log import EventLogContext, events
from webhooks_service.settings import Settings

# What each blueprint's handlers read of the context: the context is both (mypy checks it).
READS: tuple[type[EndpointsContext], type[EventLogContext]] = (Context, Context)


def create_app(settings: Settings | None = None, *, context: Context | None = None) -> App:
    """The webhooks API; ``context`` defaults to the parts ``wire`` builds from ``settings``."""
    settings = settings or Settings()
    context = context or wire(settings)
    app = create_json_api_app(
        "webhooks-service",
        settings,
        database=database_config(settings),
        context=context,
        routes=[webhooks, events],
    )

    async def end_streams(app: App) -> None:
        # Before the server drains: an open stream would otherwise hold it for the whole
        # grace period. Each client reconnects, to another replica, with Last-Event-ID.
        context.feed.end_all("shutdown")

    app.register_listener(end_streams, "before_server_stop")
    return app
