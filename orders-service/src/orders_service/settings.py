"""orders-service settings, from the environment: the families it reads
(docs/configuration.md)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from api_shared.events.settings import PublisherSettings
from api_shared.settings import PlatformSettings, ServiceSettings, TokenSettings
from api_shared.standing import StandingSettings


class DatabaseSettings(PlatformSettings):
    """orders-service's database and the upkeep of its idempotency records."""

    family: ClassVar[str] = "Common and databases"

    database_url: str = Field(
        default="sqlite://var/orders.sqlite3",
        validation_alias="ORDERS_DATABASE_URL",
        description="its database; or a `postgres://` URL",
    )
    idempotency_purge_interval_s: float = Field(
        default=3600.0,
        gt=0,
        validation_alias="IDEMPOTENCY_PURGE_INTERVAL_S",
        description="how often idempotency records older than 24 h are purged",
    )


class UpstreamSettings(PlatformSettings):
    """Where orders-service listens and the catalog it checks orders against."""

    family: ClassVar[str] = "Ports, upstreams and callers"

    port: int = Field(default=8002, validation_alias="ORDERS_PORT", description="its port")
    books_graphql_url: str = Field(
        default="http://127.0.0.1:4000/graphql",
        validation_alias="BOOKS_GRAPHQL_URL",
        description="where book ids are checked",
    )
    # Short on purpose: a create waits for the catalog while a client waits for the create.
    upstream_timeout_s: float = Field(
        default=2.0,
        gt=0,
        le=30,
        validation_alias="ORDERS_UPSTREAM_TIMEOUT_S",
        description="timeout of its calls to books-graphql and users-service; past it → 503 "
        "and nothing written",
    )


# orders-service's own families come first: their fields override ServiceSettings' (``port``).
class Settings(
    DatabaseSettings,
    UpstreamSettings,
    ServiceSettings,
    TokenSettings,
    PublisherSettings,
    StandingSettings,
):
    """Issuer, audience and JWKS URL come from TokenSettings, shared with users-service;
    users-service's replicas and how long its word on a caller holds, from StandingSettings."""
