"""books-graphql settings, from the environment."""

from __future__ import annotations

from pydantic import Field

from api_shared.settings import ServiceSettings


class Settings(ServiceSettings):
    port: int = Field(default=4000, validation_alias="BOOKS_PORT")
