"""The catcher's settings: where it listens, how much it keeps, where ``list`` reads it."""

from __future__ import annotations

from pydantic import Field

from api_shared.settings import MIB, PlatformSettings


class CatcherSettings(PlatformSettings):
    """Where the catcher listens, and how much it keeps."""

    host: str = Field(default="127.0.0.1", validation_alias="MAIL_CATCHER_HOST")
    smtp_port: int = Field(default=1025, ge=0, le=65535, validation_alias="MAIL_CATCHER_SMTP_PORT")
    http_port: int = Field(default=8025, ge=0, le=65535, validation_alias="MAIL_CATCHER_HTTP_PORT")
    capacity: int = Field(default=500, ge=1, validation_alias="MAIL_CATCHER_CAPACITY")
    max_message_bytes: int = Field(default=MIB, ge=1, validation_alias="MAIL_CATCHER_MAX_BYTES")
    # Where ``list`` reads the API.
    url: str = Field(default="http://127.0.0.1:8025", validation_alias="MAIL_CATCHER_URL")
    log_level: str = Field(default="INFO", validation_alias="LOG_LEVEL")
