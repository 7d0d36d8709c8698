"""The JetStream streams, defined once: each publishing service's relay makes sure of its
own, idempotently, at its start (its NATS user may manage that stream and no other); a
consumer of another service's stream waits for it to exist."""

from __future__ import annotations

from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import NotFoundError

# JetStream drops a message whose Nats-Msg-Id it saw within this window: a relay that
# crashed between publishing and marking republishes well within it.
DUPLICATE_WINDOW_S = 600.0
MAX_AGE_S = 7 * 24 * 3600.0


def _events_of(service: str) -> StreamConfig:
    """The stream of one service's events: ``<SERVICE>``, subjects ``<service>.events.>``."""
    return StreamConfig(
        name=service.upper(),
        subjects=[f"{service}.events.>"],
        retention=RetentionPolicy.LIMITS,
        storage=StorageType.FILE,
        max_age=MAX_AGE_S,
        duplicate_window=DUPLICATE_WINDOW_S,
    )


ORDERS = _events_of("orders")
USERS = _events_of("users")


async def ensure_stream(js: JetStreamContext, config: StreamConfig) -> None:
    """Create the stream, or bring an existing one to ``config``."""
    assert config.name is not None
    try:
        await js.stream_info(config.name)
    except NotFoundError:
        await js.add_stream(config)
        return
    await js.update_stream(config)
