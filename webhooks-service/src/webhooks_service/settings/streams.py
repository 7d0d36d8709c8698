"""What the event log keeps, and how its streams (GET /api/events/stream) are served."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from api_shared.events.settings import DEFAULT_HISTORY_RETENTION_S
from api_shared.settings import PlatformSettings


class EventLogSettings(PlatformSettings):
    """How long the event log keeps what the dispatcher recorded."""

    family: ClassVar[str] = "Events and NATS"

    # The event log (GET /api/events) keeps each event this long after it was recorded: the
    # setting, and default, of the publishers' own event history (api_shared.events.settings).
    events_history_retention_s: float = Field(
        default=DEFAULT_HISTORY_RETENTION_S,
        gt=0,
        validation_alias="EVENTS_HISTORY_RETENTION_S",
        description="how long its event log (`GET /api/events`, "
        "[docs/api.md#event-log](api.md#event-log)) keeps an event after the dispatcher "
        "recorded it",
        json_schema_extra={"default_note": "30 days"},
    )


class EventStreamSettings(PlatformSettings):
    """The event stream (GET /api/events/stream, docs/api.md#event-stream)."""

    family: ClassVar[str] = "Event streams"

    # A comment this often keeps proxies (and the gateway's idle timeout) from closing a
    # quiet stream.
    stream_heartbeat_s: float = Field(
        default=15.0,
        gt=0,
        le=300,
        validation_alias="EVENTS_STREAM_HEARTBEAT_S",
        description="a `: heartbeat` comment on an event stream after this long without an "
        "event ([docs/api.md#event-stream](api.md#event-stream))",
    )
    # How often users-service is asked again whether a stream's caller still may read it.
    stream_recheck_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        validation_alias="EVENTS_STREAM_RECHECK_S",
        description="how often a stream's caller is confirmed again with users-service; the "
        "stream ends when they are not",
    )
    # A frame its client has not taken in this long: the client is dropped as too slow.
    stream_send_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=600,
        validation_alias="EVENTS_STREAM_SEND_TIMEOUT_S",
        description="a stream whose frame waits this long to be written is dropped as too slow",
    )
    # Events a stream holds for a client that has not taken them; past it the stream ends
    # and the client resumes from the log (Last-Event-ID).
    stream_buffer: int = Field(
        default=1000,
        ge=1,
        le=100_000,
        validation_alias="EVENTS_STREAM_BUFFER",
        description="events a stream holds for a client that has not read them; past it the "
        "stream ends (the client resumes with `Last-Event-ID`)",
    )
    # Streams open at once: per process (503 beyond); per account, its API keys' included,
    # and per client address (429 beyond). One address may hold less than the process's
    # most, so a process full of one client's streams still serves the next caller.
    stream_max_per_caller: int = Field(
        default=5,
        ge=1,
        le=1000,
        validation_alias="EVENTS_STREAM_MAX_PER_CALLER",
        description="open streams per account, its API keys' included, per replica (429 beyond)",
    )
    # A few dozen: the accounts of a household or an office behind one address (NAT), never
    # the whole process (a 20th of the default EVENTS_STREAM_MAX).
    stream_max_per_address: int = Field(
        default=50,
        ge=1,
        le=100_000,
        validation_alias="EVENTS_STREAM_MAX_PER_ADDRESS",
        description="open streams per client address (the gateway's `X-Real-IP`; IPv6: per "
        "/64), whichever accounts they are of, per replica (429 beyond); below the replica's "
        "cap, so one address never takes every stream "
        "([docs/api.md#event-stream](api.md#event-stream))",
        json_schema_extra={"default_note": "below `EVENTS_STREAM_MAX`"},
    )
    stream_max: int = Field(
        default=1000,
        ge=1,
        le=100_000,
        validation_alias="EVENTS_STREAM_MAX",
        description="open streams per replica (503 beyond)",
    )
    # How often the feed reads the log when no notification wakes it (SQLite, or the
    # PostgreSQL listener down); with the listener it reads on each notification.
    stream_poll_s: float = Field(
        default=0.25,
        gt=0,
        le=60,
        validation_alias="EVENTS_STREAM_POLL_S",
        description="how often the stream's feed reads the event log when no PostgreSQL "
        "notification wakes it (SQLite)",
    )
