"""orders-service settings, from the environment."""

from __future__ import annotations

from pydantic import Field

from api_shared.settings import ServiceSettings


class Settings(ServiceSettings):
    port: int = Field(default=8002, validation_alias="ORDERS_PORT")
    database_url: str = Field(
        default="sqlite://var/orders.sqlite3", validation_alias="ORDERS_DATABASE_URL"
    )
