"""The dispatcher: events in from JetStream (``intake``), deliveries out to the endpoints,
signed and retried (``deliverer``), and the upkeep (``maintenance``);
``webhooks_service.dispatcher`` is its process."""

from webhooks_service.delivery.wiring import DispatcherContext, wire_delivery

__all__ = ["DispatcherContext", "wire_delivery"]
