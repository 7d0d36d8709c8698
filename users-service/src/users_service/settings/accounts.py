"""users-service's own families of settings: its database and port, the tokens and sessions it
signs, the admin it ensures and what hashing a password may cost."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from argon2 import DEFAULT_MEMORY_COST, DEFAULT_PARALLELISM, DEFAULT_TIME_COST
from pydantic import Field, SecretStr

from api_shared.settings import CommaList, PlatformSettings
from users_service.policies import NoExpiryFor

# Development only: `make run` works out of the box; production refuses both (see Settings).
DEV_SIGNING_KEY_FILE = Path("var/dev-signing-key.pem")
DEV_ADMIN_EMAIL = "admin@example.com"
DEV_ADMIN_PASSWORD = "dev-admin-password"  # noqa: S105 - documented, refused in production

DAY_S = 24 * 3600

# A user body is under 4 KiB; the platform's 1 MiB would only let bigger bodies cost more.
DEFAULT_MAX_BODY_BYTES = 16 * 1024


class DatabaseSettings(PlatformSettings):
    """users-service's database, and the bodies it accepts."""

    family: ClassVar[str] = "Common and databases"

    # Its own limit under the platform's MAX_BODY_BYTES (1 MiB, set for every service).
    users_max_body_bytes: int = Field(
        default=DEFAULT_MAX_BODY_BYTES,
        gt=0,
        validation_alias="USERS_MAX_BODY_BYTES",
        description="its body limit (a user body is < 4 KiB), within `MAX_BODY_BYTES`: the "
        "smaller applies; larger → 413 PAYLOAD_TOO_LARGE",
    )
    database_url: str = Field(
        default="sqlite://var/users.sqlite3",
        validation_alias="USERS_DATABASE_URL",
        description="its database; or `postgres://user:pass@host:5432/db` "
        "([operations](operations.md#postgresql))",
    )


class PortSettings(PlatformSettings):
    """Where users-service listens."""

    family: ClassVar[str] = "Ports, upstreams and callers"

    port: int = Field(default=8001, validation_alias="USERS_PORT", description="its port")


class SessionSettings(PlatformSettings):
    """The tokens users-service signs, the sessions behind them, and API keys."""

    family: ClassVar[str] = "Tokens and sessions"

    jwt_private_key_file: Path | None = Field(
        default=None,
        validation_alias="JWT_PRIVATE_KEY_FILE",
        description="PEM Ed25519 private key signing tokens "
        "(`openssl genpkey -algorithm ed25519 -out key.pem`)",
        json_schema_extra={
            "shown_default": f"development: `{DEV_SIGNING_KEY_FILE}` (created); "
            "production: **required**"
        },
    )
    # Public keys of retired signing keys, still published so their tokens stay valid.
    jwt_public_key_files: CommaList[tuple[Path, ...]] = Field(
        default=(),
        validation_alias="JWT_PUBLIC_KEY_FILES",
        description="comma-separated PEM public keys of retired signing keys, still published "
        "in the JWKS",
    )
    access_token_ttl_s: int = Field(
        default=900,
        ge=60,
        le=24 * 3600,
        validation_alias="ACCESS_TOKEN_TTL_S",
        description="access-token lifetime: how long a token of an ended session still works "
        "at the gateway and orders-service",
    )
    refresh_token_ttl_s: int = Field(
        default=30 * DAY_S,
        ge=60,
        validation_alias="REFRESH_TOKEN_TTL_S",
        description="a refresh token expires this long after it was issued, unused",
        json_schema_extra={"default_note": "30 days"},
    )
    # A session ends this long after its login however often it is refreshed.
    session_max_lifetime_s: int = Field(
        default=90 * DAY_S,
        ge=60,
        validation_alias="SESSION_MAX_LIFETIME_S",
        description="a session ends this long after its login, however often it is refreshed",
        json_schema_extra={"default_note": "90 days"},
    )
    session_purge_interval_s: float = Field(
        default=3600.0,
        gt=0,
        validation_alias="SESSION_PURGE_INTERVAL_S",
        description="how often ended and expired sessions are deleted",
    )
    # API keys (docs/api.md#api-keys): minting one needs a login (or the password) this
    # recent; a key lives at most this long, unless it is made by someone API_KEY_NO_EXPIRY_FOR
    # names, who may also ask for a key that never expires.
    recent_authentication_s: int = Field(
        default=600,
        ge=60,
        le=3600,
        validation_alias="RECENT_AUTHENTICATION_S",
        description="minting an API key, or revoking every key, needs a login this recent (the "
        "token's `auth_time`) or `currentPassword` (403 REAUTHENTICATION_REQUIRED)",
    )
    api_key_max_lifetime_s: int = Field(
        default=365 * DAY_S,
        ge=3600,
        le=10 * 365 * DAY_S,
        validation_alias="API_KEY_MAX_LIFETIME_S",
        description="the longest an API key may live (an hour to ten years): a later "
        "`expiresAt` is refused, an absent one is this far away",
        json_schema_extra={"default_note": "a year"},
    )
    api_key_no_expiry_for: NoExpiryFor = Field(
        default=NoExpiryFor.NOBODY,
        validation_alias="API_KEY_NO_EXPIRY_FOR",
        description="whose keys that maximum does not bound, who may also make keys that never "
        "expire (`expiresAt: null`): `nobody`, `admins` or `everyone`",
    )


class AdminSettings(PlatformSettings):
    """The admin ensured at start-up, and what hashing a password may cost."""

    family: ClassVar[str] = "Passwords and the admin"

    admin_email: str | None = Field(
        default=None,
        validation_alias="ADMIN_EMAIL",
        description="the admin created at start-up if missing, with the password below; an "
        "existing admin keeps its password; an existing non-admin account with that email is "
        "never promoted: the service starts without the admin and logs an error",
        json_schema_extra={"shown_default": f"development: `{DEV_ADMIN_EMAIL}`; production: unset"},
    )
    # The admin's password from a file (a mounted secret): the only way production takes it,
    # since an environment variable is seen by every child process and many crash reports.
    admin_password_file: Path | None = Field(
        default=None,
        validation_alias="ADMIN_PASSWORD_FILE",
        description="the file holding that admin's password (a mounted secret)",
    )
    admin_password: SecretStr | None = Field(
        default=None,
        validation_alias="ADMIN_PASSWORD",
        description="development only: the admin's password in the environment instead of a "
        "file; production refuses it",
        json_schema_extra={"shown_default": f"development: `{DEV_ADMIN_PASSWORD}`"},
    )
    # Argon2id cost: the defaults are argon2-cffi's (RFC 9106 low-memory profile);
    # tests lower them to keep the suite fast.
    argon2_time_cost: int = Field(
        default=DEFAULT_TIME_COST,
        ge=1,
        validation_alias="ARGON2_TIME_COST",
        description="Argon2id time cost; production refuses weak values",
    )
    argon2_memory_kib: int = Field(
        default=DEFAULT_MEMORY_COST,
        ge=8,
        validation_alias="ARGON2_MEMORY_KIB",
        description="Argon2id memory cost; production refuses weak values",
    )
    argon2_parallelism: int = Field(
        default=DEFAULT_PARALLELISM,
        ge=1,
        validation_alias="ARGON2_PARALLELISM",
        description="Argon2id parallelism; production refuses weak values",
    )
    # How many hashes may hold their memory at once: the budget over one hash's memory,
    # unless ARGON2_SLOTS says so explicitly (see ``argon2_slots``).
    argon2_memory_budget_mib: int = Field(
        default=256,
        ge=1,
        validation_alias="ARGON2_MEMORY_BUDGET_MIB",
        description="memory for concurrent Argon2 hashes per process: slots = budget ÷ "
        "(`ARGON2_MEMORY_KIB` ÷ 1024), at least 1 (4 by default)",
    )
    argon2_slots_override: int | None = Field(
        default=None,
        ge=1,
        validation_alias="ARGON2_SLOTS",
        description="explicit number of concurrent hashes per process, instead of the budget's",
    )
    # How long a request waits for a free slot before it is answered 503.
    argon2_slot_wait_s: float = Field(
        default=0.5,
        ge=0,
        le=30,
        validation_alias="ARGON2_SLOT_WAIT_S",
        description="how long a sign-up, login or password change waits for a free slot "
        "before 503 UNAVAILABLE (Retry-After: 1); with two slots or more one is kept for logins",
    )
