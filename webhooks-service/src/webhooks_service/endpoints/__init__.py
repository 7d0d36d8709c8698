"""The endpoint API (``/api/webhooks…``): endpoints registered by their owners (or admins),
their secrets and audiences, and their deliveries as the API shows them (listed, replayed,
test events). What the dispatcher reads of it: the endpoints' store, who receives an event
(``receivers``), the events made about an endpoint, and the row of a new delivery."""

from webhooks_service.endpoints.audience import receivers
from webhooks_service.endpoints.own_events import DISABLED_EVENT_TYPE, NOTICE_STREAM, endpoint_event
from webhooks_service.endpoints.ports import EndpointStore
from webhooks_service.endpoints.repository import EndpointRepository, pending_delivery
from webhooks_service.endpoints.routes import EndpointsContext, webhooks
from webhooks_service.endpoints.services import WebhookService
from webhooks_service.endpoints.wiring import url_guard, wire_endpoints

__all__ = [
    "DISABLED_EVENT_TYPE",
    "NOTICE_STREAM",
    "EndpointRepository",
    "EndpointStore",
    "EndpointsContext",
    "WebhookService",
    "endpoint_event",
    "pending_delivery",
    "receivers",
    "url_guard",
    "webhooks",
    "wire_endpoints",
]
