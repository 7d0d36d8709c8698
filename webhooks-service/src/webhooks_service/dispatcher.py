"""The dispatcher process (``python -m webhooks_service dispatch``): its context and its app.

It takes events from JetStream (``intake``), keeps each in the event log and delivers them
(``delivery``), and keeps the database in order (``maintenance``, every
WEBHOOK_PURGE_INTERVAL_S). Its app serves
only ``/health``, ``/ready`` (database, schema, NATS connected, delivery loop running) and
``/metrics`` on WEBHOOKS_DISPATCHER_PORT. Any number of dispatchers may run: they share the
durable consumers and, on PostgreSQL, the deliveries (row locks, SKIP LOCKED).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from prometheus_client import Counter
from prometheus_client.registry import Collector

from api_shared.background import Periodic
from api_shared.context import Inert, Resource, install_context
from api_shared.database import SchemaCheck, install_database
from api_shared.service import create_service_app
from api_shared.types import App
from webhooks_service.addresses import UrlGuard
from webhooks_service.context import url_guard
from webhooks_service.database import database_config
from webhooks_service.delivery import Deliverer
from webhooks_service.intake import EventIntake
from webhooks_service.maintenance import Maintenance
from webhooks_service.ports import Clock
from webhooks_service.repository import (
    DeliveryRepository,
    EndpointRepository,
    EventLogRepository,
)
from webhooks_service.secret_box import SecretBox, load_secret_box
from webhooks_service.services import utc_now
from webhooks_service.settings import Settings

MIGRATIONS = "webhooks_service.migrations"
NATS_USER = "webhooks-dispatcher"  # its NATS user: it may read the streams, not publish


class DispatcherMetrics(Inert):
    """``webhook_events_total{stream}`` taken in; ``webhook_delivery_attempts_total{outcome}``
    (``delivered``, ``retry``: failed and scheduled again, ``failed``: failed for good);
    ``webhook_endpoints_auto_disabled_total``, endpoints the upkeep disabled as failing.
    A resource of the context for its metrics alone."""

    def __init__(self) -> None:
        # registry=None: registered on the app's registry by install_context.
        self.events = Counter(
            "webhook_events_total",
            "Events taken from JetStream, by stream.",
            ["stream"],
            registry=None,
        )
        self.attempts = Counter(
            "webhook_delivery_attempts_total",
            "Delivery attempts by outcome: delivered, retry (failed, tried again) or failed.",
            ["outcome"],
            registry=None,
        )

        self.auto_disabled = Counter(
            "webhook_endpoints_auto_disabled",
            "Endpoints disabled because no attempt succeeded for WEBHOOK_DISABLE_AFTER_S.",
            registry=None,
        )

    def collectors(self) -> Sequence[Collector]:
        return (self.events, self.attempts, self.auto_disabled)

    def endpoints_disabled(self, count: int) -> None:
        self.auto_disabled.inc(count)

    def event_taken(self, stream: str) -> None:
        self.events.labels(stream).inc()

    def attempted(self, outcome: str) -> None:
        self.attempts.labels(outcome).inc()


@dataclass(frozen=True, slots=True)
class DispatcherContext:
    settings: Settings
    intake: EventIntake  # JetStream → delivery rows
    deliverer: Deliverer  # delivery rows → POSTs
    # Secrets resealed, grace periods ended, old deliveries purged, failing endpoints disabled.
    maintenance: Maintenance
    metrics: DispatcherMetrics
    resources: tuple[Resource, ...]


def wire_dispatcher(
    settings: Settings,
    *,
    guard: UrlGuard | None = None,
    box: SecretBox | None = None,
    clock: Clock = utc_now,
) -> DispatcherContext:
    """Build every part from ``settings``; a keyword replaces that part (tests pass fakes)."""
    metrics = DispatcherMetrics()
    endpoints, deliveries, log = EndpointRepository(), DeliveryRepository(), EventLogRepository()
    box = box or load_secret_box(settings)
    # Started once the database is open; they begin work when the migration Job has run.
    schema = SchemaCheck(MIGRATIONS)
    deliverer = Deliverer(
        deliveries,
        guard or url_guard(settings),
        box,
        clock,
        timeout_s=settings.delivery_timeout_s,
        retry_delays_s=settings.retry_delays_s,
        poll_interval_s=settings.poll_interval_s,
        concurrency=settings.concurrency,
        on_attempt=metrics.attempted,
        wait_ready=schema.wait,
    )
    intake = EventIntake(
        settings.nats_login(NATS_USER),
        endpoints,
        deliveries,
        log,
        clock,
        on_event=metrics.event_taken,
        on_deliveries=deliverer.poke,
        wait_ready=schema.wait,
    )
    maintenance = Maintenance(
        endpoints,
        deliveries,
        box,
        clock,
        retention=timedelta(seconds=settings.delivery_retention_s),
        disable_after=timedelta(seconds=settings.disable_after_s),
        log=log,
        log_retention=timedelta(seconds=settings.events_history_retention_s),
        on_disabled=metrics.endpoints_disabled,
        on_deliveries=deliverer.poke,
        wait_ready=schema.wait,
    )
    upkeep = Periodic("webhook-maintenance", maintenance.run, settings.purge_interval_s)
    return DispatcherContext(
        settings=settings,
        intake=intake,
        deliverer=deliverer,
        maintenance=maintenance,
        metrics=metrics,
        resources=(metrics, deliverer, intake, upkeep),
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
