"""A service's events at run time: its NATS link, outbox relay and consumers, one resource of
its context (started once the database is open, stopped before it closes) that reports the
relay's numbers as metrics.

The relay is not a readiness check of the service: with NATS down the service still takes
requests (their events wait in the outbox); ``outbox_relay_up`` and the lag say so. With
``EVENTS_ENABLED`` false a service has none of it (``events_of``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence

from nats.js.api import StreamConfig
from prometheus_client.registry import Collector

from api_shared.background import BackgroundTask, Periodic
from api_shared.events.consumer import DurableConsumer, cloud_event
from api_shared.events.credentials import NatsLogin
from api_shared.events.envelope import CloudEvent
from api_shared.events.link import NatsLink
from api_shared.events.relay import Relay
from api_shared.events.settings import DEFAULT_HISTORY_RETENTION_S, PublisherSettings
from api_shared.metrics import Reading, Readings

PURGE_INTERVAL_S = 3600.0


class Events:
    """One service's NATS link, relay and consumers, as one resource (start, stop) with the
    relay's metrics (``Measured``, api_shared.context)."""

    def __init__(
        self,
        login: NatsLogin,
        stream: StreamConfig,
        *,
        retention_s: float = DEFAULT_HISTORY_RETENTION_S,
    ) -> None:
        self.link = NatsLink(login)
        self.relay = Relay(self.link, stream, retention_s=retention_s)
        # Every replica may purge: deleting what is long published is idempotent.
        self.purge = Periodic("outbox-purge", self.relay.purge_published, PURGE_INTERVAL_S)
        self.consumers: list[DurableConsumer[CloudEvent]] = []

    def consume(
        self,
        stream: StreamConfig,
        *,
        durable: str,
        subject: str,
        handler: Callable[[CloudEvent], Awaitable[None]],
    ) -> DurableConsumer[CloudEvent]:
        """A durable consumer of ``subject``'s events on this service's link."""
        consumer = DurableConsumer(
            self.link,
            stream,
            durable=durable,
            subject=subject,
            decode=cloud_event,
            handler=handler,
        )
        self.consumers.append(consumer)
        return consumer

    @property
    def parts(self) -> Sequence[BackgroundTask]:
        return (self.link, self.relay, self.purge, *self.consumers)

    def collectors(self) -> Sequence[Collector]:
        return (Readings(relay_readings(self.relay)),)

    async def start(self) -> None:
        for part in self.parts:
            await part.start()

    async def stop(self) -> None:
        for part in reversed(self.parts):
            await part.stop()


def events_of(settings: PublisherSettings, stream: StreamConfig, *, name: str) -> Events | None:
    """The events of a service publishing to ``stream``, connected as NATS user ``name``;
    None when ``EVENTS_ENABLED`` is false (its outbox then records nothing, so there is
    nothing to relay or connect for). ``ConfigurationError`` when the user's seed is
    required and not given (``EventSettings.nats_login``). The stream is kept on
    ``EVENTS_STREAM_REPLICAS`` servers, published outbox rows ``EVENTS_HISTORY_RETENTION_S``."""
    if not settings.events_enabled:
        return None
    replicated = dataclasses.replace(stream, num_replicas=settings.events_stream_replicas)
    return Events(
        settings.nats_login(name), replicated, retention_s=settings.events_history_retention_s
    )


def relay_readings(relay: Relay) -> list[Reading]:
    """The relay as metrics: its lag, what it published, its state."""
    stats = relay.stats
    return [
        Reading(
            "outbox_oldest_unpublished_age_seconds",
            "Age of the oldest event not yet published to NATS (0: none waiting).",
            lambda: stats.oldest_unpublished_age_s,
        ),
        Reading(
            "outbox_published",
            "Events published to NATS and acked.",
            lambda: stats.published,
            kind="counter",
        ),
        Reading(
            "outbox_publish_duplicates",
            "Publications JetStream dropped as duplicates (republished after a crash).",
            lambda: stats.duplicates,
            kind="counter",
        ),
        Reading(
            "outbox_relay_failures",
            "Relay rounds that failed (NATS down).",
            lambda: stats.failures,
            kind="counter",
        ),
        Reading(
            "outbox_relay_up",
            "1 when the relay's last round reached NATS.",
            lambda: int(relay.healthy),
        ),
    ]
