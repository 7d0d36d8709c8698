"""The dispatcher process (``python -m webhooks_service dispatch``): its wiring and its app.

It takes events from JetStream (``delivery.intake``), keeps each in the event log and
delivers them (``delivery.deliverer``), and keeps the database in order
(``delivery.maintenance``, every WEBHOOK_PURGE_INTERVAL_S). Its app serves only ``/health``,
``/ready`` (database, schema, NATS connected, delivery loop running) and ``/metrics`` on
WEBHOOKS_DISPATCHER_PORT. Any number of dispatchers may run: they share the durable
consumers and, on PostgreSQL, the deliveries (row locks, SKIP LOCKED).
"""

from __future__ import annotations

from api_shared.context import install_context
from api_shared.database import install_database
from api_shared.service_app import create_service_app
from api_shared.types import App
from webhooks_service.addresses import UrlGuard
from webhooks_service.clock import Clock, utc_now
from webhooks_service.database import database_config
from webhooks_service.delivery import DispatcherContext, wire_delivery
from webhooks_service.endpoints import EndpointRepository, url_guard
from webhooks_service.event_log import EventLogRepository
from webhooks_service.secret_box import SecretBox, load_secret_box
from webhooks_service.settings import Settings


def wire_dispatcher(
    settings: Settings,
    *,
    guard: UrlGuard | None = None,
    box: SecretBox | None = None,
    clock: Clock = utc_now,
) -> DispatcherContext:
    """Build every part from ``settings``; a keyword replaces that part (tests pass fakes).
    The dispatcher works on the endpoints and the event log through their stores."""
    return wire_delivery(
        settings,
        endpoints=EndpointRepository(),
        log=EventLogRepository(),
        guard=guard or url_guard(settings),
        box=box or load_secret_box(settings),
        clock=clock,
    )


def dispatcher_settings() -> Settings:
    """The settings from the environment, serving on the dispatcher's own port."""
    settings = Settings()
    return settings.model_copy(update={"port": settings.dispatcher_port})


def create_dispatcher_app(
    settings: Settings | None = None, *, context: DispatcherContext | None = None
) -> App:
    """The dispatcher: its probes and metrics; the work is done by the context's resources."""
    settings = settings or dispatcher_settings()
    context = context or wire_dispatcher(settings)
    app = create_service_app("webhooks-dispatcher", settings, distribution="webhooks-service")
    install_database(app, database_config(settings))
    install_context(app, context)  # its resources bring their metrics and readiness checks
    return app
