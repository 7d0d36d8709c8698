"""orders-service settings, from the environment."""

from __future__ import annotations

from pydantic import Field

from api_shared.events.settings import PublisherSettings
from api_shared.settings import ServiceSettings, TokenSettings
from api_shared.standing import StandingSettings


class Settings(ServiceSettings, TokenSettings, PublisherSettings, StandingSettings):
    """Issuer, audience and JWKS URL come from TokenSettings, shared with users-service;
    users-service's replicas and how long its word on a caller holds, from StandingSettings."""

    port: int = Field(default=8002, validation_alias="ORDERS_PORT")
    database_url: str = Field(
        default="sqlite://var/orders.sqlite3", validation_alias="ORDERS_DATABASE_URL"
    )
    books_graphql_url: str = Field(
        default="http://127.0.0.1:4000/graphql", validation_alias="BOOKS_GRAPHQL_URL"
    )
    # Short on purpose: a create waits for the catalog while a client waits for the create.
    upstream_timeout_s: float = Field(
        default=2.0, gt=0, le=30, validation_alias="ORDERS_UPSTREAM_TIMEOUT_S"
    )
    idempotency_purge_interval_s: float = Field(
        default=3600.0, gt=0, validation_alias="IDEMPOTENCY_PURGE_INTERVAL_S"
    )
