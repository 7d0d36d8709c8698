"""The app of a JSON API service over its own database: every resource service is built so."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sanic import Blueprint

from api_shared.context import ServiceContext, install_context
from api_shared.database import install_database
from api_shared.events.asyncapi import install_asyncapi, service_document
from api_shared.events.catalog import EventCatalog
from api_shared.media import install_json_media_rules
from api_shared.service_app import create_service_app
from api_shared.settings import ServiceSettings
from api_shared.types import App
from api_shared.version import service_version


def create_json_api_app(
    name: str,
    settings: ServiceSettings,
    *,
    database: dict[str, Any],
    context: ServiceContext,
    routes: Sequence[Blueprint],
    events: EventCatalog | None = None,
) -> App:
    """The service's frame, JSON in and out, its ORM, its context, then its ``routes``.

    ``events``: the catalog of what the service publishes, served as its AsyncAPI document.
    """
    app = create_service_app(name, settings)
    install_json_media_rules(app)
    install_database(app, database)
    install_context(app, context)
    if events is not None:
        install_asyncapi(
            app, service_document(f"{name} events", events, version=service_version(name))
        )
    for blueprint in routes:
        app.blueprint(blueprint)
    return app
