"""The event log's part of the service's wiring: its store, its rules, and its live feed and
streams for the API process."""

from __future__ import annotations

from dataclasses import dataclass

from api_shared.standing import CallerConfirmation
from webhooks_service.event_log.feed import EventFeed
from webhooks_service.event_log.ports import EventLogStore
from webhooks_service.event_log.repository import EventLogRepository
from webhooks_service.event_log.services import EventLogService
from webhooks_service.event_log.stream import EventStreams, StreamTimings
from webhooks_service.settings import Settings

# The feed's poll while PostgreSQL notifies it of each write: a safety net only.
LISTENING_POLL_S = 5.0
RECONNECT_MS = 2000  # what a stream tells its client to wait before reconnecting


@dataclass(frozen=True, slots=True)
class EventLogPart:
    store: EventLogStore  # where events are kept (the endpoint API's test events too)
    service: EventLogService  # GET /api/events
    feed: EventFeed  # the log, live, for this process's streams (a context Resource)
    streams: EventStreams  # GET /api/events/stream


def wire_event_log(settings: Settings, standing: CallerConfirmation) -> EventLogPart:
    """The event log's parts; ``standing`` is users-service's word on a stream's caller,
    asked again as long as the stream is open."""
    store = EventLogRepository()
    feed = EventFeed(
        store,
        max_streams=settings.stream_max,
        max_per_caller=settings.stream_max_per_caller,
        max_per_address=settings.stream_max_per_address,
        buffer=settings.stream_buffer,
        idle_s=settings.stream_poll_s,
        listening_idle_s=LISTENING_POLL_S,
    )
    timings = StreamTimings(
        heartbeat_s=settings.stream_heartbeat_s,
        recheck_s=settings.stream_recheck_s,
        send_timeout_s=settings.stream_send_timeout_s,
        retry_ms=RECONNECT_MS,
    )
    return EventLogPart(
        store=store,
        service=EventLogService(store),
        feed=feed,
        streams=EventStreams(feed, store, standing, timings),
    )
