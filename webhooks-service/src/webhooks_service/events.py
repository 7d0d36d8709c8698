"""An event as it crosses the service: taken from JetStream by the dispatcher
(``delivery.intake``) or made here (``endpoints.own_events``), then delivered
(``delivery``) and logged (``event_log``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class IncomingEvent:
    """An event as the dispatcher took it from JetStream."""

    id: str
    type: str
    subject: str
    stream: str
    stream_sequence: int
    payload: str
    user_id: str | None = None  # whose personal data it carries (personal_data)
    time: datetime | None = None  # its own ``time``; None: it has none that reads as one
