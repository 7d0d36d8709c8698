"""Where a service finds NATS (``NATS_URL``, else the embedded server of ``make run``), as
whom it connects (``NATS_NKEY_SEED_FILE``), whether a publishing service records events
at all (``EVENTS_ENABLED``) and how long it keeps them once published
(``EVENTS_HISTORY_RETENTION_S``)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field

from api_shared.events.credentials import NatsLogin, seed_file
from api_shared.settings import ConfigurationError, EnvironmentSettings

EMBEDDED_NATS_PORT = 4223
"""The embedded nats-server's default port: not NATS's own 4222, which another may hold."""

DEV_NATS_KEYS_DIR = Path("var/nats-keys")
DEFAULT_HISTORY_RETENTION_S = 30 * 24 * 3600.0
"""How long a published event stays in its outbox (30 days): the history receivers catch up
from (orders-service's ``GET /orders/{id}/events``)."""


class EventSettings(EnvironmentSettings):
    """Mixed into the settings of each service that records or consumes events."""

    family: ClassVar[str] = "Events and NATS"

    nats_url: str | None = Field(
        default=None,
        validation_alias="NATS_URL",
        description="the NATS server (JetStream) the outbox relays publish to, orders-service "
        "and the webhooks dispatcher consume from (a cluster's servers comma-separated: a "
        "client connects to one and moves to another when it stops answering PINGs, within "
        "about 15 s); set, `make run` starts no nats-server of its own. Unreachable, events "
        "wait in the outbox ([docs/api.md#events](api.md#events))",
        json_schema_extra={"shown_default": "unset: `nats://127.0.0.1:$NATS_PORT`"},
    )
    # The embedded server listens here (api_devservers.nats_server), and services look for it
    # here when NATS_URL is unset.
    nats_port: int = Field(
        default=EMBEDDED_NATS_PORT,
        ge=1,
        le=65535,
        validation_alias="NATS_PORT",
        description="the port of the nats-server `make run` starts (not 4222, NATS's own, which "
        "another server may hold), and where the services look when `NATS_URL` is unset",
    )
    # The embedded server's JetStream store.
    nats_store_dir: Path = Field(
        default=Path("var/nats"),
        validation_alias="NATS_STORE_DIR",
        description="the JetStream store of the nats-server `make run` starts",
    )
    # This process's NKey seed (a secret file): the NATS user it connects as. Required in
    # production; in development, unset, the seed the embedded server wrote for it.
    nats_nkey_seed_file: Path | None = Field(
        default=None,
        validation_alias="NATS_NKEY_SEED_FILE",
        description="the NKey seed (a secret file, `SU…`) of this process's NATS user: "
        "`users-service`, `orders-service` or `webhooks-dispatcher`, each allowed only its own "
        "subjects ([security](security.md#deployment)). Production refuses to start without "
        "it: `refusing to start: NATS_NKEY_SEED_FILE must name the NKey seed of the NATS user "
        "…`. Never logged; a file that is missing or holds no seed is named in the log and "
        "tried again",
        json_schema_extra={
            "shown_default": "development: `$NATS_KEYS_DIR/<user>.nk`; production: **required** "
            "(users-service and orders-service unless `EVENTS_ENABLED=false`; the dispatcher)"
        },
    )
    # Development: where the embedded server keeps a seed per NATS user (made at its first
    # start) and its config; each process finds its own seed there.
    nats_keys_dir: Path = Field(
        default=DEV_NATS_KEYS_DIR,
        validation_alias="NATS_KEYS_DIR",
        description="development: where `make run`'s nats-server writes each NATS user's seed at "
        "its first start (kept afterwards) and its config at every start, and where each "
        "process finds its own seed when `NATS_NKEY_SEED_FILE` is unset",
    )

    @property
    def nats_server_url(self) -> str:
        return self.nats_url or f"nats://127.0.0.1:{self.nats_port}"

    def nats_login(self, user: str) -> NatsLogin:
        """How this process, NATS user ``user``, connects: ``ConfigurationError`` in
        production without ``NATS_NKEY_SEED_FILE`` (a development seed is never used there)."""
        if self.nats_nkey_seed_file is not None:
            return NatsLogin(self.nats_server_url, user, self.nats_nkey_seed_file)
        if self.is_production:
            raise ConfigurationError(
                f"NATS_NKEY_SEED_FILE must name the NKey seed of the NATS user {user} when "
                "APP_ENV=production; NATS refuses clients without one"
            )
        return NatsLogin(self.nats_server_url, user, seed_file(self.nats_keys_dir, user))


class PublisherSettings(EventSettings):
    """Mixed into the settings of each service that records events (users, orders)."""

    # False: no outbox rows, no relay, no NATS connection, no consumers (orders-service then
    # does not delete a deleted user's orders). For platforms without NATS, and for measuring
    # what events cost (bench/events.py); on by default.
    events_enabled: bool = Field(
        default=True,
        validation_alias="EVENTS_ENABLED",
        description="`false` records no events (no outbox rows), runs no relay, opens no NATS "
        "connection and consumes nothing, so orders-service no longer deletes a deleted "
        "user's orders; for a platform without NATS, and to measure what events cost "
        "([docs/benchmarks.md](benchmarks.md)). The dispatcher does not read it",
    )
    # How many NATS servers keep a copy of this service's stream: 1 on one server (compose,
    # make run); 3 on a three-server cluster (Docker Swarm, Kubernetes), where losing a
    # server loses no event. Never more than the cluster's servers: JetStream refuses it.
    events_stream_replicas: int = Field(
        default=1,
        ge=1,
        le=5,
        validation_alias="EVENTS_STREAM_REPLICAS",
        description="how many NATS servers keep the service's stream, never more than the "
        "cluster has (JetStream refuses it). `3` on a three-server cluster (Docker Swarm, "
        "Kubernetes): one server lost loses no event",
    )
    # Published outbox rows are kept this long, then purged (hourly): an order's event history
    # (GET /orders/{id}/events) reaches back this far. Unpublished rows are never purged.
    events_history_retention_s: float = Field(
        default=DEFAULT_HISTORY_RETENTION_S,
        gt=0,
        validation_alias="EVENTS_HISTORY_RETENTION_S",
        description="how long an event stays in the service's outbox once published, then the "
        "hourly purge deletes it (unpublished events are never purged). An order's event "
        "history, `GET /orders/{id}/events`, reaches back this far "
        "([docs/api.md#event-history](api.md#event-history)). Each kept event holds what it "
        "carried (an order's items and note)",
        json_schema_extra={"default_note": "30 days"},
    )
