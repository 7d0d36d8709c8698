"""Where webhooks-service's two processes run: the database they share, their ports, and how
long users-service is waited for."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from api_shared.settings import PlatformSettings


class DatabaseSettings(PlatformSettings):
    """The database webhooks-service's two processes share."""

    family: ClassVar[str] = "Common and databases"

    database_url: str = Field(
        default="sqlite://var/webhooks.sqlite3",
        validation_alias="WEBHOOKS_DATABASE_URL",
        description="its database, the API's and the dispatcher's; or a `postgres://` URL",
    )


class UpstreamSettings(PlatformSettings):
    """Where the API and the dispatcher listen, and how long users-service is waited for."""

    family: ClassVar[str] = "Ports, upstreams and callers"

    port: int = Field(
        default=8003,
        validation_alias="WEBHOOKS_PORT",
        description="the admin API of webhook endpoints ([docs/api.md#webhooks](api.md#webhooks))",
    )
    # The dispatcher's own port: /health, /ready and /metrics only.
    dispatcher_port: int = Field(
        default=8004,
        ge=1,
        le=65535,
        validation_alias="WEBHOOKS_DISPATCHER_PORT",
        description="the dispatcher's port: its `/health`, `/ready` (database, schema, NATS, "
        "delivery loop) and `/metrics`",
    )
    # How long to wait for users-service's word on a caller before 503.
    users_timeout_s: float = Field(
        default=2.0,
        gt=0,
        le=30,
        validation_alias="WEBHOOKS_UPSTREAM_TIMEOUT_S",
        description="how long to wait for users-service's answer on a caller before 503",
    )
