"""Where a service finds NATS (``NATS_URL``, else the embedded server of ``make run``), and
whether a publishing service records events at all (``EVENTS_ENABLED``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings

from api_shared.settings import SETTINGS_CONFIG

EMBEDDED_NATS_PORT = 4223
"""The embedded nats-server's default port: not NATS's own 4222, which another may hold."""


class EventSettings(BaseSettings):
    """Mixed into the settings of each service that records or consumes events."""

    model_config = SETTINGS_CONFIG

    nats_url: str | None = Field(default=None, validation_alias="NATS_URL")
    # The embedded server listens here (api_shared.events.server), and services look for it
    # here when NATS_URL is unset.
    nats_port: int = Field(default=EMBEDDED_NATS_PORT, ge=1, le=65535, validation_alias="NATS_PORT")
    # The embedded server's JetStream store.
    nats_store_dir: Path = Field(default=Path("var/nats"), validation_alias="NATS_STORE_DIR")

    @property
    def nats_server_url(self) -> str:
        return self.nats_url or f"nats://127.0.0.1:{self.nats_port}"


class PublisherSettings(EventSettings):
    """Mixed into the settings of each service that records events (users, orders)."""

    # False: no outbox rows, no relay, no NATS connection, no consumers (orders-service then
    # does not delete a deleted user's orders). For platforms without NATS, and for measuring
    # what events cost (bench/events.py); on by default.
    events_enabled: bool = Field(default=True, validation_alias="EVENTS_ENABLED")
