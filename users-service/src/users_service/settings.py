"""users-service settings, from the environment."""

from __future__ import annotations

from pydantic import Field

from api_shared.settings import ServiceSettings


class Settings(ServiceSettings):
    port: int = Field(default=8001, validation_alias="USERS_PORT")
    database_url: str = Field(
        default="sqlite://var/users.sqlite3", validation_alias="USERS_DATABASE_URL"
    )
