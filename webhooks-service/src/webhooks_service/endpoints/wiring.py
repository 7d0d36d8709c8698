"""The endpoint API's part of the service's wiring: its rules on their stores, and the URL
rules as configured (the dispatcher checks each attempt with them too)."""

from __future__ import annotations

from webhooks_service.addresses import UrlGuard
from webhooks_service.clock import Clock, utc_now
from webhooks_service.endpoints.repository import DeliveryHistoryRepository, EndpointRepository
from webhooks_service.endpoints.services import WebhookService
from webhooks_service.event_log import EventLogStore
from webhooks_service.secret_box import SecretBox, load_secret_box
from webhooks_service.settings import Settings


def url_guard(settings: Settings) -> UrlGuard:
    """The SSRF rules as configured (docs/api.md#webhooks): checked when an endpoint is
    registered or changed, and by the dispatcher at each attempt."""
    return UrlGuard(allow_private=settings.allow_private, allowed_hosts=settings.allowed_hosts)


def wire_endpoints(
    settings: Settings,
    *,
    log: EventLogStore,
    guard: UrlGuard | None = None,
    box: SecretBox | None = None,
    clock: Clock = utc_now,
) -> WebhookService:
    """The rules of the endpoint API; ``log`` keeps the test events they make. A keyword
    replaces that part (tests pass fakes)."""
    return WebhookService(
        EndpointRepository(),
        DeliveryHistoryRepository(),
        guard or url_guard(settings),
        box or load_secret_box(settings),
        clock,
        max_grace_s=settings.secret_grace_s,
        log=log,
    )
