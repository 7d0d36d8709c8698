"""Gateway settings, from the environment."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from api_shared.settings import CommaList, ServiceSettings, TokenSettings, UrlList
from api_shared.standing import StandingSettings


class Settings(ServiceSettings, TokenSettings, StandingSettings):
    """The gateway's settings. From StandingSettings: users-service's replicas
    (``USERS_SERVICE_URL``, both the upstream and where API keys are asked about) and how long
    its word on a key is kept (``STANDING_CACHE_S``)."""

    port: int = Field(default=8000, validation_alias="GATEWAY_PORT")
    # /health, /ready and /metrics are served here (on HOST), never on the public port.
    admin_port: int = Field(default=9000, ge=1, le=65535, validation_alias="GATEWAY_ADMIN_PORT")
    # Each upstream may be several replicas: ``http://a:8001,http://b:8001`` (users-service's
    # are StandingSettings' ``users_service_urls``).
    orders_service_urls: UrlList = Field(
        default=["http://127.0.0.1:8002"], validation_alias="ORDERS_SERVICE_URL", min_length=1
    )
    books_service_urls: UrlList = Field(
        default=["http://127.0.0.1:4000"], validation_alias="BOOKS_SERVICE_URL", min_length=1
    )
    webhooks_service_urls: UrlList = Field(
        default=["http://127.0.0.1:8003"], validation_alias="WEBHOOKS_SERVICE_URL", min_length=1
    )
    upstream_timeout_s: float = Field(default=10.0, gt=0, validation_alias="UPSTREAM_TIMEOUT_S")
    upstream_connect_timeout_s: float = Field(
        default=2.0, gt=0, validation_alias="UPSTREAM_CONNECT_TIMEOUT_S"
    )
    # A replica that refused a connection is skipped for this long (passive health).
    upstream_down_s: float = Field(default=5.0, ge=0, validation_alias="UPSTREAM_DOWN_S")
    # A streamed answer (Server-Sent Events) ends after this long without a byte from its
    # upstream: three missed heartbeats. Below Sanic's response timeout (60 s), which would
    # cut a silent stream off without its last chunk.
    stream_idle_timeout_s: float = Field(
        default=45.0, gt=0, lt=60, validation_alias="GATEWAY_STREAM_IDLE_TIMEOUT_S"
    )
    # Streams open at once in this process; one more is 503 UNAVAILABLE.
    max_streams: int = Field(default=1000, ge=1, validation_alias="GATEWAY_MAX_STREAMS")
    rate_limit_rps: float = Field(default=50.0, gt=0, validation_alias="RATE_LIMIT_RPS")
    rate_limit_burst: int = Field(default=100, ge=1, validation_alias="RATE_LIMIT_BURST")
    # The bucket every API key of one owner shares (50 keys are one budget), apart from the
    # owner's own tokens; unset: the per-caller numbers above.
    api_key_rate_limit_rps: float | None = Field(
        default=None, gt=0, validation_alias="API_KEY_RATE_LIMIT_RPS"
    )
    api_key_rate_limit_burst: int | None = Field(
        default=None, ge=1, validation_alias="API_KEY_RATE_LIMIT_BURST"
    )
    # Every request also draws from its client address's bucket (IPv6: its /64), whatever
    # token it carries; unset: ADDRESS_FACTOR times the per-caller numbers.
    address_rate_limit_rps: float | None = Field(
        default=None, gt=0, validation_alias="ADDRESS_RATE_LIMIT_RPS"
    )
    address_rate_limit_burst: int | None = Field(
        default=None, ge=1, validation_alias="ADDRESS_RATE_LIMIT_BURST"
    )
    # Logins per client address (IPv6: per /48). Failed logins per account are
    # users-service's budget: it knows which account a login names.
    login_rate_limit_per_minute: int = Field(
        default=10, ge=1, validation_alias="LOGIN_RATE_LIMIT_PER_MINUTE"
    )
    # Refreshes per client address (a refresh is cheap, and a whole office may share one).
    refresh_rate_limit_per_minute: int = Field(
        default=60, ge=1, validation_alias="REFRESH_RATE_LIMIT_PER_MINUTE"
    )
    # Sign-ups per client address (IPv6: per /48), each an Argon2 hash. Password and email
    # changes, which only users-service can tell apart, are its own budget.
    signup_rate_limit_per_minute: int = Field(
        default=10, ge=1, validation_alias="SIGNUP_RATE_LIMIT_PER_MINUTE"
    )
    # Password reset requests per client address: each may mail someone (users-service
    # also limits the messages per recipient and per account, which only it can tell).
    reset_request_rate_limit_per_minute: int = Field(
        default=5, ge=1, validation_alias="RESET_REQUEST_RATE_LIMIT_PER_MINUTE"
    )
    # Redemptions of mailed tokens (email verifications, password resets) per client
    # address: what a guesser of tokens may try, on top of their 256 bits.
    account_token_rate_limit_per_minute: int = Field(
        default=10, ge=1, validation_alias="ACCOUNT_TOKEN_RATE_LIMIT_PER_MINUTE"
    )
    # The JWKS is fetched again this often, so that a withdrawn key stops being trusted.
    jwks_refresh_interval_s: float = Field(
        default=300.0, ge=1, le=300, validation_alias="JWKS_REFRESH_INTERVAL_S"
    )
    # Rate-limit buckets live in Redis when set (shared by replicas), else in memory.
    redis_url: str | None = Field(default=None, validation_alias="REDIS_URL")
    # Browser origins allowed to call the API (exact origins); none by default.
    cors_origins: UrlList = Field(default=[], validation_alias="CORS_ORIGINS")
    # Peers whose X-Forwarded-For is believed (addresses or CIDRs); nobody's by default.
    trusted_proxies: CommaList[list[str]] = Field(default=[], validation_alias="TRUSTED_PROXIES")

    ADDRESS_FACTOR: ClassVar[int] = 4

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
