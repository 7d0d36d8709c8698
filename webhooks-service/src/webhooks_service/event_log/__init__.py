"""The event log: every event taken in or made here, kept once (``GET /api/events``), and
live (``GET /api/events/stream``). The endpoint API and the dispatcher write it through
``EventLogStore``."""

from webhooks_service.event_log.feed import EventFeed
from webhooks_service.event_log.ports import EventLogStore
from webhooks_service.event_log.repository import EventLogRepository
from webhooks_service.event_log.routes import EventLogContext, events
from webhooks_service.event_log.services import EventLogService
from webhooks_service.event_log.stream import EventStreams
from webhooks_service.event_log.wiring import EventLogPart, wire_event_log

__all__ = [
    "EventFeed",
    "EventLogContext",
    "EventLogPart",
    "EventLogRepository",
    "EventLogService",
    "EventLogStore",
    "EventStreams",
    "events",
    "wire_event_log",
]
