"""The rate limits only users-service can charge (users_service.budgets)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from api_shared.settings import PlatformSettings

# Failed logins per account from every address, unless set: this many addresses' worth, so
# that no single address can use up the account's budget and lock its owner out.
ACCOUNT_CEILING_FACTOR = 10


class RateLimitSettings(PlatformSettings):
    """The budgets only users-service can charge (users_service.budgets)."""

    family: ClassVar[str] = "Rate limits"

    # In Redis when set, shared by every replica (and the gateway's Redis may be the same
    # one), else in memory.
    redis_url: str | None = Field(
        default=None,
        validation_alias="REDIS_URL",
        description="its own budgets (the rate limits users-service reads) in Redis, shared by "
        "every replica (the gateway's Redis will do); while Redis fails, each process limits "
        "with its own buckets (`rate_limiter_errors_total`)",
    )
    # Failed logins per (account, client address), and per account from every address.
    login_account_rate_limit_per_minute: int = Field(
        default=10,
        ge=1,
        validation_alias="LOGIN_ACCOUNT_RATE_LIMIT_PER_MINUTE",
        description="failed logins per (account, client address); the account is the one "
        "users-service reads the email as, whatever its spelling",
    )
    login_account_ceiling_per_minute: int | None = Field(
        default=None,
        ge=1,
        validation_alias="LOGIN_ACCOUNT_CEILING_PER_MINUTE",
        description="failed logins per account from every address together",
        json_schema_extra={
            "shown_default": f"{ACCOUNT_CEILING_FACTOR} \N{MULTIPLICATION SIGN} "
            "`LOGIN_ACCOUNT_RATE_LIMIT_PER_MINUTE`"
        },
    )
    # Password and email changes and self-deletions per client address (IPv6: per /48),
    # each a current-password check or a hash.
    credential_change_rate_limit_per_minute: int = Field(
        default=10,
        ge=1,
        validation_alias="CREDENTIAL_CHANGE_RATE_LIMIT_PER_MINUTE",
        description="password and email changes and self-deletions (each a current-password "
        "check or a hash) per client address (IPv6: per /48), whatever path spells them",
    )
    # Wrong current passwords per account within the window, from anywhere: what a stolen
    # access token may guess.
    current_password_failure_limit: int = Field(
        default=10,
        ge=1,
        validation_alias="CURRENT_PASSWORD_FAILURE_LIMIT",
        description="wrong `currentPassword`s per account within "
        "`CURRENT_PASSWORD_FAILURE_WINDOW_S`, from every address: what a stolen access token "
        "may guess",
    )
    current_password_failure_window_s: float = Field(
        default=900.0,
        gt=0,
        validation_alias="CURRENT_PASSWORD_FAILURE_WINDOW_S",
        description="the window of `CURRENT_PASSWORD_FAILURE_LIMIT`",
    )
    # Refreshes per session, with that session's own tokens: a client refreshes once per
    # access-token lifetime; a loop or a thief many times more.
    refresh_session_rate_limit_per_minute: int = Field(
        default=6,
        ge=1,
        validation_alias="REFRESH_SESSION_RATE_LIMIT_PER_MINUTE",
        description="refreshes per session, counted only with that session's own refresh tokens",
    )
