"""The dispatcher's metrics, at ``/metrics`` on WEBHOOKS_DISPATCHER_PORT."""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import Counter
from prometheus_client.registry import Collector

from api_shared.context import Inert


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
