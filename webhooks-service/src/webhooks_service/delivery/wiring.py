"""The dispatcher's part of the wiring: its parts, built from the settings and handed the
endpoints and the event log it works on (``webhooks_service.dispatcher`` names those)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

from api_shared.background import Periodic
from api_shared.context import Resource
from api_shared.database import SchemaCheck
from webhooks_service.addresses import UrlGuard
from webhooks_service.clock import Clock
from webhooks_service.delivery.deliverer import Deliverer
from webhooks_service.delivery.intake import EventIntake
from webhooks_service.delivery.maintenance import Maintenance
from webhooks_service.delivery.metrics import DispatcherMetrics
from webhooks_service.delivery.ports import DeliveryStore
from webhooks_service.delivery.repository import DeliveryRepository
from webhooks_service.endpoints import EndpointStore
from webhooks_service.event_log import EventLogStore
from webhooks_service.secret_box import SecretBox
from webhooks_service.settings import Settings

MIGRATIONS = "webhooks_service.migrations"
NATS_USER = "webhooks-dispatcher"  # its NATS user: it may read the streams, not publish

Ready = Callable[[], Awaitable[None]]  # returns once the schema is at its latest migration


@dataclass(frozen=True, slots=True)
class DispatcherContext:
    intake: EventIntake  # JetStream → delivery rows
    deliverer: Deliverer  # delivery rows → POSTs
    # Secrets resealed, grace periods ended, old deliveries purged, failing endpoints disabled.
    maintenance: Maintenance
    metrics: DispatcherMetrics
    resources: tuple[Resource, ...]


def wire_delivery(
    settings: Settings,
    *,
    endpoints: EndpointStore,
    log: EventLogStore,
    guard: UrlGuard,
    box: SecretBox,
    clock: Clock,
) -> DispatcherContext:
    """The dispatcher's parts, working on ``endpoints`` and ``log``: the intake and the
    upkeep wake the deliverer when they write deliveries; each counts what it does."""
    metrics, deliveries = DispatcherMetrics(), DeliveryRepository()
    # Started once the database is open; they begin work when the migration Job has run.
    ready = SchemaCheck(MIGRATIONS).wait
    deliverer = _deliverer(settings, deliveries, guard, box, clock, metrics, ready)
    intake = EventIntake(
        settings.nats_login(NATS_USER),
        endpoints,
        deliveries,
        log,
        clock,
        on_event=metrics.event_taken,
        on_deliveries=deliverer.poke,
        wait_ready=ready,
    )
    upkeep = _upkeep(settings, endpoints, deliveries, log, box, clock, metrics, deliverer, ready)
    every = settings.purge_interval_s
    return DispatcherContext(
        intake=intake,
        deliverer=deliverer,
        maintenance=upkeep,
        metrics=metrics,
        resources=(metrics, deliverer, intake, Periodic("webhook-maintenance", upkeep.run, every)),
    )


def _deliverer(
    settings: Settings,
    deliveries: DeliveryStore,
    guard: UrlGuard,
    box: SecretBox,
    clock: Clock,
    metrics: DispatcherMetrics,
    ready: Ready,
) -> Deliverer:
    return Deliverer(
        deliveries,
        guard,
        box,
        clock,
        timeout_s=settings.delivery_timeout_s,
        retry_delays_s=settings.retry_delays_s,
        poll_interval_s=settings.poll_interval_s,
        concurrency=settings.concurrency,
        on_attempt=metrics.attempted,
        wait_ready=ready,
    )


def _upkeep(
    settings: Settings,
    endpoints: EndpointStore,
    deliveries: DeliveryStore,
    log: EventLogStore,
    box: SecretBox,
    clock: Clock,
    metrics: DispatcherMetrics,
    deliverer: Deliverer,
    ready: Ready,
) -> Maintenance:
    return Maintenance(
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
        wait_ready=ready,
    )
