"""Which endpoints may be named, and how the dispatcher delivers to them."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field

from api_shared.settings import CommaList, PlatformSettings
from webhooks_service.backoff import DEFAULT_DELAYS_S

# Development only: `make run` works out of the box; production refuses it (see Settings).
DEV_SECRETS_KEY_FILE = Path("var/webhook-secrets.key")
DAY_S = 24 * 3600
MAX_GRACE_S = 7 * DAY_S  # the longest a replaced secret may keep signing


class DeliverySettings(PlatformSettings):
    """Which endpoints may be named, and how the dispatcher delivers to them."""

    family: ClassVar[str] = "Webhooks"

    # Endpoints on loopback, private, link-local… addresses: refused unless this is set
    # (local development and tests); see docs/api.md#webhooks.
    allow_private: bool = Field(
        default=False,
        validation_alias="WEBHOOK_ALLOW_PRIVATE",
        description="`1` accepts endpoint URLs on loopback, private and link-local addresses, "
        "and `http` (at registration and at delivery): local development and tests only; "
        "refused (the service does not start) when `APP_ENV=production`",
        json_schema_extra={"shown_default": "unset (`0`); `make run`: `1`"},
    )
    # When set, the only hosts an endpoint may name (test stacks: 127.0.0.1), whatever else.
    allowed_hosts: CommaList[tuple[str, ...]] = Field(
        default=(),
        validation_alias="WEBHOOK_ALLOWED_HOSTS",
        description="comma-separated hosts: when set, the only ones an endpoint may name, at "
        "registration and at delivery (the test stacks: `127.0.0.1`); with "
        "`APP_ENV=production`, a host that is a loopback, private, link-local… address "
        "literal or `localhost` is refused at start",
    )
    # Short: a receiver should acknowledge at once and do its work later.
    delivery_timeout_s: float = Field(
        default=5.0,
        gt=0,
        le=30,
        validation_alias="WEBHOOK_TIMEOUT_S",
        description="an attempt without an answer by then fails",
    )
    # Seconds to wait after each failed attempt (jittered); after the last, the delivery fails.
    retry_delays_s: CommaList[tuple[float, ...]] = Field(
        default=DEFAULT_DELAYS_S,
        min_length=1,
        validation_alias="WEBHOOK_RETRY_DELAYS_S",
        description="seconds before each retry, jittered ±10 %; after the last retry fails the "
        "delivery is `failed`; they may add up to 24 h at most",
    )
    # How often the dispatcher looks for due deliveries when it has nothing to do.
    poll_interval_s: float = Field(
        default=1.0,
        gt=0,
        le=60,
        validation_alias="WEBHOOK_POLL_INTERVAL_S",
        description="how often an idle dispatcher looks for due deliveries (retries coming "
        "due, other dispatchers' events); events it takes itself are attempted at once",
    )
    # Deliveries in flight at once, per dispatcher process.
    concurrency: int = Field(
        default=8,
        ge=1,
        le=100,
        validation_alias="WEBHOOK_CONCURRENCY",
        description="deliveries in flight at once, per dispatcher",
    )
    # The Fernet keys endpoint secrets are sealed with, one per line, the sealing one first
    # (webhooks_service.secret_box); production requires it.
    secrets_key_file: Path | None = Field(
        default=None,
        validation_alias="WEBHOOK_SECRETS_KEY_FILE",
        description="Fernet keys (one per line, `#` comments allowed) endpoint secrets are "
        "sealed with in the database: the first seals, every one opens. A key: "
        "`openssl rand -base64 32 | tr '+/' '-_'`",
        json_schema_extra={
            "shown_default": f"development: `{DEV_SECRETS_KEY_FILE}` (created); "
            "production: **required**"
        },
    )
    # How long a rotated-out secret keeps signing beside the new one (the longest a rotation
    # may ask for); receivers switch to the new secret meanwhile.
    secret_grace_s: int = Field(
        default=DAY_S,
        ge=0,
        le=MAX_GRACE_S,
        validation_alias="WEBHOOK_SECRET_GRACE_S",
        description="how long a secret replaced by `POST /api/webhooks/{id}/secrets` keeps "
        "signing beside the new one, by default and at most (a rotation may ask for less, `0` "
        "ends it at once; more is clamped to it); up to 7 days",
        json_schema_extra={"default_note": "24 h"},
    )
    # Deliveries (and their attempts) are deleted this long after they were created: they
    # hold personal data (docs/api.md#delivery). At least two days: longer than any retry
    # schedule (24 h at most, jittered), so that no delivery goes while it is being retried.
    delivery_retention_s: int = Field(
        default=30 * DAY_S,
        ge=2 * DAY_S,
        validation_alias="WEBHOOK_DELIVERY_RETENTION_S",
        description="deliveries and their attempts (which hold the events' personal data) are "
        "deleted this long after they were created, whatever their status; at least 2 days, "
        "longer than any retry schedule",
        json_schema_extra={"default_note": "30 days"},
    )
    # How often each dispatcher does its upkeep (webhooks_service.delivery.maintenance).
    purge_interval_s: float = Field(
        default=3600.0,
        gt=0,
        le=DAY_S,
        validation_alias="WEBHOOK_PURGE_INTERVAL_S",
        description="how often each dispatcher does its upkeep (also once at its start): "
        "purges the deliveries past `WEBHOOK_DELIVERY_RETENTION_S`, seals secrets not sealed "
        "with the first key, forgets replaced secrets whose grace period is over, disables "
        "the endpoints failing for longer than `WEBHOOK_DISABLE_AFTER_S`",
    )
    # An endpoint none of whose attempts succeeded for this long is disabled by the upkeep
    # (reason ``failing``, docs/api.md#delivery); 5 days by default, short in tests.
    disable_after_s: int = Field(
        default=5 * DAY_S,
        ge=1,
        validation_alias="WEBHOOK_DISABLE_AFTER_S",
        description="an enabled endpoint none of whose attempts succeeded for this long (since "
        "its first failed attempt after its last success, or after an admin enabled it) is "
        "disabled by the upkeep with `disabledReason` `failing`",
        json_schema_extra={"default_note": "5 days"},
    )
