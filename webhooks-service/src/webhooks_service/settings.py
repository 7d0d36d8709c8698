"""webhooks-service settings, from the environment (the API and the dispatcher read the same);
unsafe production configuration is refused."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator, model_validator

from api_shared.events.settings import DEFAULT_HISTORY_RETENTION_S, EventSettings
from api_shared.settings import CommaList, ServiceSettings, TokenSettings
from api_shared.standing import StandingSettings
from webhooks_service.addresses import names_a_private_host
from webhooks_service.backoff import DEFAULT_DELAYS_S, MAX_SPAN_S

# Development only: `make run` works out of the box; production refuses it (see below).
DEV_SECRETS_KEY_FILE = Path("var/webhook-secrets.key")
DAY_S = 24 * 3600
MAX_GRACE_S = 7 * DAY_S  # the longest a replaced secret may keep signing


class Settings(ServiceSettings, TokenSettings, EventSettings, StandingSettings):
    port: int = Field(default=8003, validation_alias="WEBHOOKS_PORT")
    # How long to wait for users-service's word on a caller before 503.
    users_timeout_s: float = Field(
        default=2.0, gt=0, le=30, validation_alias="WEBHOOKS_UPSTREAM_TIMEOUT_S"
    )
    database_url: str = Field(
        default="sqlite://var/webhooks.sqlite3", validation_alias="WEBHOOKS_DATABASE_URL"
    )
    # The dispatcher's own port: /health, /ready and /metrics only.
    dispatcher_port: int = Field(
        default=8004, ge=1, le=65535, validation_alias="WEBHOOKS_DISPATCHER_PORT"
    )
    # Endpoints on loopback, private, link-local… addresses: refused unless this is set
    # (local development and tests); see docs/api.md#webhooks.
    allow_private: bool = Field(default=False, validation_alias="WEBHOOK_ALLOW_PRIVATE")
    # When set, the only hosts an endpoint may name (test stacks: 127.0.0.1), whatever else.
    allowed_hosts: CommaList[tuple[str, ...]] = Field(
        default=(), validation_alias="WEBHOOK_ALLOWED_HOSTS"
    )
    # Short: a receiver should acknowledge at once and do its work later.
    delivery_timeout_s: float = Field(
        default=5.0, gt=0, le=30, validation_alias="WEBHOOK_TIMEOUT_S"
    )
    # Seconds to wait after each failed attempt (jittered); after the last, the delivery fails.
    retry_delays_s: CommaList[tuple[float, ...]] = Field(
        default=DEFAULT_DELAYS_S, min_length=1, validation_alias="WEBHOOK_RETRY_DELAYS_S"
    )
    # How often the dispatcher looks for due deliveries when it has nothing to do.
    poll_interval_s: float = Field(
        default=1.0, gt=0, le=60, validation_alias="WEBHOOK_POLL_INTERVAL_S"
    )
    # Deliveries in flight at once, per dispatcher process.
    concurrency: int = Field(default=8, ge=1, le=100, validation_alias="WEBHOOK_CONCURRENCY")
    # The Fernet keys endpoint secrets are sealed with, one per line, the sealing one first
    # (webhooks_service.secret_box); production requires it.
    secrets_key_file: Path | None = Field(default=None, validation_alias="WEBHOOK_SECRETS_KEY_FILE")
    # Deliveries (and their attempts) are deleted this long after they were created: they
    # hold personal data (docs/api.md#delivery). At least two days: longer than any retry
    # schedule (24 h at most, jittered), so that no delivery goes while it is being retried.
    delivery_retention_s: int = Field(
        default=30 * DAY_S, ge=2 * DAY_S, validation_alias="WEBHOOK_DELIVERY_RETENTION_S"
    )
    # The event log (GET /api/events) keeps each event this long after it was recorded: the
    # setting, and default, of the publishers' own event history (api_shared.events.settings).
    events_history_retention_s: float = Field(
        default=DEFAULT_HISTORY_RETENTION_S, gt=0, validation_alias="EVENTS_HISTORY_RETENTION_S"
    )
    # An endpoint none of whose attempts succeeded for this long is disabled by the upkeep
    # (reason ``failing``, docs/api.md#delivery); 5 days by default, short in tests.
    disable_after_s: int = Field(
        default=5 * DAY_S, ge=1, validation_alias="WEBHOOK_DISABLE_AFTER_S"
    )
    # How often each dispatcher does its upkeep (webhooks_service.delivery.maintenance).
    purge_interval_s: float = Field(
        default=3600.0, gt=0, le=DAY_S, validation_alias="WEBHOOK_PURGE_INTERVAL_S"
    )
    # How long a rotated-out secret keeps signing beside the new one (the longest a rotation
    # may ask for); receivers switch to the new secret meanwhile.
    secret_grace_s: int = Field(
        default=DAY_S, ge=0, le=MAX_GRACE_S, validation_alias="WEBHOOK_SECRET_GRACE_S"
    )

    # The event stream (GET /api/events/stream, docs/api.md#event-stream). A comment this
    # often keeps proxies (and the gateway's idle timeout) from closing a quiet stream.
    stream_heartbeat_s: float = Field(
        default=15.0, gt=0, le=300, validation_alias="EVENTS_STREAM_HEARTBEAT_S"
    )
    # How often users-service is asked again whether a stream's caller still may read it.
    stream_recheck_s: float = Field(
        default=60.0, gt=0, le=3600, validation_alias="EVENTS_STREAM_RECHECK_S"
    )
    # A frame its client has not taken in this long: the client is dropped as too slow.
    stream_send_timeout_s: float = Field(
        default=30.0, gt=0, le=600, validation_alias="EVENTS_STREAM_SEND_TIMEOUT_S"
    )
    # Streams open at once: per process (503 beyond); per account, its API keys' included,
    # and per client address (429 beyond). One address may hold less than the process's
    # most, so a process full of one client's streams still serves the next caller.
    stream_max: int = Field(default=1000, ge=1, le=100_000, validation_alias="EVENTS_STREAM_MAX")
    stream_max_per_caller: int = Field(
        default=5, ge=1, le=1000, validation_alias="EVENTS_STREAM_MAX_PER_CALLER"
    )
    # A few dozen: the accounts of a household or an office behind one address (NAT), never
    # the whole process (a 20th of the default EVENTS_STREAM_MAX).
    stream_max_per_address: int = Field(
        default=50, ge=1, le=100_000, validation_alias="EVENTS_STREAM_MAX_PER_ADDRESS"
    )
    # Events a stream holds for a client that has not taken them; past it the stream ends
    # and the client resumes from the log (Last-Event-ID).
    stream_buffer: int = Field(
        default=1000, ge=1, le=100_000, validation_alias="EVENTS_STREAM_BUFFER"
    )
    # How often the feed reads the log when no notification wakes it (SQLite, or the
    # PostgreSQL listener down); with the listener it reads on each notification.
    stream_poll_s: float = Field(default=0.25, gt=0, le=60, validation_alias="EVENTS_STREAM_POLL_S")

    @field_validator("retry_delays_s")
    @classmethod
    def _within_a_day(cls, delays: tuple[float, ...]) -> tuple[float, ...]:
        if any(delay <= 0 for delay in delays):
            raise ValueError("every delay must be above 0")
        if sum(delays) > MAX_SPAN_S:
            raise ValueError(f"the delays must add up to at most {MAX_SPAN_S:g} s (24 h)")
        return delays

    @model_validator(mode="after")
    def _one_address_never_fills_the_process(self) -> Settings:
        if self.stream_max_per_address >= self.stream_max:
            raise ValueError(
                f"EVENTS_STREAM_MAX_PER_ADDRESS ({self.stream_max_per_address}) must be below "
                f"EVENTS_STREAM_MAX ({self.stream_max}): one client address must not take "
                "every stream of a replica"
            )
        return self

    @model_validator(mode="after")
    def _refuse_unsafe_configuration(self) -> Settings:
        if not self.is_production:
            return self
        if self.allow_private:
            raise ValueError(
                "WEBHOOK_ALLOW_PRIVATE=1 lets endpoints reach loopback and private addresses: "
                "it is for development and tests, and refused when APP_ENV=production"
            )
        private = [host for host in self.allowed_hosts if names_a_private_host(host)]
        if private:
            raise ValueError(
                f"WEBHOOK_ALLOWED_HOSTS names hosts that are not public ({', '.join(private)}): "
                "refused when APP_ENV=production"
            )
        if self.secrets_key_file is None:
            raise ValueError(
                "WEBHOOK_SECRETS_KEY_FILE must name the key file endpoint secrets are sealed "
                "with when APP_ENV=production; the development key is never used in production"
            )
        return self
