"""users-service's mail and events: the account mail it sends (verification, password reset)
and how long its outbox keeps what it published."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from api_shared.settings import PlatformSettings
from users_service.settings.accounts import DAY_S


class AccountMailSettings(PlatformSettings):
    """Email verification and password reset: where the messages' links point, how long
    their tokens live, how many an hour (docs/api.md#email-verification-and-password-reset)."""

    family: ClassVar[str] = "Mail"

    frontend_url: str = Field(
        default="http://localhost:8000",
        validation_alias="FRONTEND_URL",
        description="the front end the messages link to: `/verify-email?token=…`, "
        "`/reset-password?token=…`",
    )
    email_verification_ttl_s: int = Field(
        default=2 * DAY_S,
        ge=60,
        le=30 * DAY_S,
        validation_alias="EMAIL_VERIFICATION_TTL_S",
        description="how long a mailed verification token works",
        json_schema_extra={"default_note": "2 days"},
    )
    # At most an hour: a reset link is a password for whoever reads the mailbox.
    password_reset_ttl_s: int = Field(
        default=1800,
        ge=60,
        le=3600,
        validation_alias="PASSWORD_RESET_TTL_S",
        description="how long a mailed reset token works",
    )
    verification_mails_per_hour: int = Field(
        default=3,
        ge=1,
        validation_alias="VERIFICATION_MAILS_PER_HOUR",
        description="verification messages per account (429 past it)",
    )
    password_reset_mails_per_hour: int = Field(
        default=3,
        ge=1,
        validation_alias="PASSWORD_RESET_MAILS_PER_HOUR",
        description="reset messages per address and per account (requests past it are "
        "accepted and mail nothing)",
    )
    # How often queued reset requests are looked for (this process's are handled at once).
    reset_request_interval_s: float = Field(
        default=1.0,
        gt=0,
        validation_alias="RESET_REQUEST_INTERVAL_S",
        description="how often queued reset requests are looked for (a replica handles its "
        "own at once)",
    )


class OutboxSettings(PlatformSettings):
    """How long users-service keeps its published events."""

    family: ClassVar[str] = "Events and NATS"

    # Published outbox rows are kept a day, not EVENTS_HISTORY_RETENTION_S: users-service
    # serves no event history, and its events carry names and emails (a deleted user's too).
    events_history_retention_s: float = Field(
        default=24 * 3600.0,
        gt=0,
        validation_alias="USERS_OUTBOX_RETENTION_S",
        description="how long an event stays in users-service's outbox once published, then "
        "the hourly purge deletes it (unpublished events are never purged); no route reads "
        "it, and its events carry names and emails, so they are not kept longer "
        "(`EVENTS_HISTORY_RETENTION_S` does not apply)",
        json_schema_extra={"default_note": "a day"},
    )
