"""Gateway settings, from the environment: the families it reads (docs/configuration.md)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from api_shared.settings import (
    CommaList,
    PlatformSettings,
    ServiceSettings,
    TokenSettings,
    UrlList,
)
from api_shared.standing import StandingSettings

ADDRESS_FACTOR = 4  # an address's bucket, unless set: this many callers' worth


class UpstreamSettings(PlatformSettings):
    """Where the gateway listens, what it forwards to, and whom it lets call it."""

    family: ClassVar[str] = "Ports, upstreams and callers"

    port: int = Field(
        default=8000,
        validation_alias="GATEWAY_PORT",
        description="the public API; of the operational routes only `/health` answers here",
    )
    # /health, /ready and /metrics are served here (on HOST), never on the public port.
    admin_port: int = Field(
        default=9000,
        ge=1,
        le=65535,
        validation_alias="GATEWAY_ADMIN_PORT",
        description="`/health`, `/ready`, `/status` and `/metrics`, on `HOST`; keep it off the "
        "public network (probes and Prometheus only)",
    )
    # Each upstream may be several replicas: ``http://a:8001,http://b:8001`` (users-service's
    # are StandingSettings' ``users_service_urls``).
    orders_service_urls: UrlList = Field(
        default=["http://127.0.0.1:8002"],
        validation_alias="ORDERS_SERVICE_URL",
        min_length=1,
        description="orders-service's replicas, comma-separated, taken in turn",
    )
    books_service_urls: UrlList = Field(
        default=["http://127.0.0.1:4000"],
        validation_alias="BOOKS_SERVICE_URL",
        min_length=1,
        description="books-graphql's replicas, comma-separated, taken in turn",
    )
    webhooks_service_urls: UrlList = Field(
        default=["http://127.0.0.1:8003"],
        validation_alias="WEBHOOKS_SERVICE_URL",
        min_length=1,
        description="webhooks-service's replicas, comma-separated, taken in turn",
    )
    upstream_timeout_s: float = Field(
        default=10.0,
        gt=0,
        validation_alias="UPSTREAM_TIMEOUT_S",
        description="no answer by then → 504 UPSTREAM_TIMEOUT",
    )
    upstream_connect_timeout_s: float = Field(
        default=2.0,
        gt=0,
        validation_alias="UPSTREAM_CONNECT_TIMEOUT_S",
        description="connection not established by then → next replica or 503",
    )
    # A replica that refused a connection is skipped for this long (passive health).
    upstream_down_s: float = Field(
        default=5.0,
        ge=0,
        validation_alias="UPSTREAM_DOWN_S",
        description="a replica that refused a connection is skipped this long",
    )
    # Browser origins allowed to call the API (exact origins); none by default.
    cors_origins: UrlList = Field(
        default=[],
        validation_alias="CORS_ORIGINS",
        description="comma-separated browser origins allowed to call the API (every response "
        "then says `Vary: Origin`, merged with an upstream's own `Vary`)",
    )
    # Peers whose X-Forwarded-For is believed (addresses or CIDRs); nobody's by default.
    trusted_proxies: CommaList[list[str]] = Field(
        default=[],
        validation_alias="TRUSTED_PROXIES",
        description="addresses/CIDRs whose `X-Forwarded-For` is believed",
    )


class KeySetSettings(PlatformSettings):
    """How fresh the gateway keeps users-service's public keys."""

    family: ClassVar[str] = "Tokens and sessions"

    # The JWKS is fetched again this often, so that a withdrawn key stops being trusted.
    jwks_refresh_interval_s: float = Field(
        default=300.0,
        ge=1,
        le=300,
        validation_alias="JWKS_REFRESH_INTERVAL_S",
        description="the JWKS is fetched again this often: a key withdrawn from it stops being "
        "trusted, cached verifications included",
    )


class RateLimitSettings(PlatformSettings):
    """The gateway's limits, by caller, API-key owner, address and route."""

    family: ClassVar[str] = "Rate limits"

    ADDRESS_FACTOR: ClassVar[int] = ADDRESS_FACTOR

    rate_limit_rps: float = Field(
        default=50.0,
        gt=0,
        validation_alias="RATE_LIMIT_RPS",
        description="sustained requests per second per caller (token subject, else client address)",
    )
    rate_limit_burst: int = Field(
        default=100, ge=1, validation_alias="RATE_LIMIT_BURST", description="bucket size"
    )
    # The bucket every API key of one owner shares (50 keys are one budget), apart from the
    # owner's own tokens; unset: the per-caller numbers above.
    api_key_rate_limit_rps: float | None = Field(
        default=None,
        gt=0,
        validation_alias="API_KEY_RATE_LIMIT_RPS",
        description="sustained requests per second per owner of API keys: all of one user's "
        "keys share one bucket, apart from the user's own tokens (instead of the per-caller "
        "one)",
        json_schema_extra={"shown_default": "`RATE_LIMIT_RPS`"},
    )
    api_key_rate_limit_burst: int | None = Field(
        default=None,
        ge=1,
        validation_alias="API_KEY_RATE_LIMIT_BURST",
        description="the size of the API-key owner's bucket",
        json_schema_extra={"shown_default": "`RATE_LIMIT_BURST`"},
    )
    # Every request also draws from its client address's bucket (IPv6: its /64), whatever
    # token it carries; unset: ADDRESS_FACTOR times the per-caller numbers.
    address_rate_limit_rps: float | None = Field(
        default=None,
        gt=0,
        validation_alias="ADDRESS_RATE_LIMIT_RPS",
        description="every request, whatever its token, also per client address (IPv6: per /64)",
        json_schema_extra={
            "shown_default": f"{ADDRESS_FACTOR} \N{MULTIPLICATION SIGN} `RATE_LIMIT_RPS`"
        },
    )
    address_rate_limit_burst: int | None = Field(
        default=None,
        ge=1,
        validation_alias="ADDRESS_RATE_LIMIT_BURST",
        description="the size of the client address's bucket",
        json_schema_extra={
            "shown_default": f"{ADDRESS_FACTOR} \N{MULTIPLICATION SIGN} `RATE_LIMIT_BURST`"
        },
    )
    # Logins per client address (IPv6: per /48). Failed logins per account are
    # users-service's budget: it knows which account a login names.
    login_rate_limit_per_minute: int = Field(
        default=10,
        ge=1,
        validation_alias="LOGIN_RATE_LIMIT_PER_MINUTE",
        description="`POST /api/auth/token` per client address (IPv6: per /48), logins and "
        "refresh grants together ([docs/api.md#limits](api.md#limits)); the per-account "
        "budgets are users-service's",
    )
    # Sign-ups per client address (IPv6: per /48), each an Argon2 hash. Password and email
    # changes, which only users-service can tell apart, are its own budget.
    signup_rate_limit_per_minute: int = Field(
        default=10,
        ge=1,
        validation_alias="SIGNUP_RATE_LIMIT_PER_MINUTE",
        description="sign-ups (`POST /api/users`) per client address (IPv6: per /48); "
        "password changes are users-service's budget",
    )
    # Refreshes per client address (a refresh is cheap, and a whole office may share one).
    refresh_rate_limit_per_minute: int = Field(
        default=60,
        ge=1,
        validation_alias="REFRESH_RATE_LIMIT_PER_MINUTE",
        description="the deprecated `POST /api/auth/refresh` per client address (IPv6: per "
        "/48; instead of the per-caller limit); per session: users-service",
    )
    # Password reset requests per client address: each may mail someone (users-service
    # also limits the messages per recipient and per account, which only it can tell).
    reset_request_rate_limit_per_minute: int = Field(
        default=5,
        ge=1,
        validation_alias="RESET_REQUEST_RATE_LIMIT_PER_MINUTE",
        description="`POST /api/password-reset-requests` per client address (IPv6: per /48); "
        "messages per recipient and account: users-service",
    )
    # Redemptions of mailed tokens (email verifications, password resets) per client
    # address: what a guesser of tokens may try, on top of their 256 bits.
    account_token_rate_limit_per_minute: int = Field(
        default=10,
        ge=1,
        validation_alias="ACCOUNT_TOKEN_RATE_LIMIT_PER_MINUTE",
        description="redemptions of mailed tokens (`POST /api/email-verifications`, "
        "`POST /api/password-resets`, together) per client address (IPv6: per /48)",
    )
    # Rate-limit buckets live in Redis when set (shared by replicas), else in memory.
    redis_url: str | None = Field(
        default=None,
        validation_alias="REDIS_URL",
        description="share rate-limit buckets between gateway replicas; while Redis fails, "
        "each replica limits with its own in-memory buckets (logged, counted in "
        "`gateway_rate_limiter_errors_total`)",
    )

    @property
    def api_key_rps(self) -> float:
        return self.api_key_rate_limit_rps or self.rate_limit_rps

    @property
    def api_key_burst(self) -> int:
        return self.api_key_rate_limit_burst or self.rate_limit_burst

    @property
    def address_rps(self) -> float:
        return self.address_rate_limit_rps or self.rate_limit_rps * self.ADDRESS_FACTOR

    @property
    def address_burst(self) -> int:
        return self.address_rate_limit_burst or self.rate_limit_burst * self.ADDRESS_FACTOR


class StreamSettings(PlatformSettings):
    """The streamed answers (Server-Sent Events) the gateway passes through."""

    family: ClassVar[str] = "Event streams"

    # A streamed answer ends after this long without a byte from its upstream: three missed
    # heartbeats. Below Sanic's response timeout (60 s), which would cut a silent stream off
    # without its last chunk.
    stream_idle_timeout_s: float = Field(
        default=45.0,
        gt=0,
        lt=60,
        validation_alias="GATEWAY_STREAM_IDLE_TIMEOUT_S",
        description="a streamed answer (`GET /api/events/stream`) that brings nothing from its "
        "upstream for this long is ended cleanly: three missed heartbeats "
        "(`EVENTS_STREAM_HEARTBEAT_S`). Streams have no total timeout "
        "([docs/api.md#limits](api.md#limits))",
    )
    # Streams open at once in this process; one more is 503 UNAVAILABLE.
    max_streams: int = Field(
        default=1000,
        ge=1,
        validation_alias="GATEWAY_MAX_STREAMS",
        description="streams one gateway process holds open at once; one more is 503 "
        "UNAVAILABLE with `Retry-After`",
    )


# The gateway's own families come first: their fields override ServiceSettings' (``port``).
class Settings(
    UpstreamSettings,
    KeySetSettings,
    RateLimitSettings,
    StreamSettings,
    ServiceSettings,
    TokenSettings,
    StandingSettings,
):
    """The gateway's settings. From StandingSettings: users-service's replicas
    (``USERS_SERVICE_URL``, both the upstream and where API keys are asked about) and how long
    its word on a key is kept (``STANDING_CACHE_S``)."""
