"""users-service settings, from the environment; unsafe production configuration is refused."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import NamedTuple

from argon2 import DEFAULT_MEMORY_COST, DEFAULT_PARALLELISM, DEFAULT_TIME_COST
from pydantic import Field, SecretStr, field_validator, model_validator

from api_shared.events.settings import PublisherSettings
from api_shared.mail.settings import MailSettings
from api_shared.settings import CommaList, ConfigurationError, ServiceSettings, TokenSettings
from users_service.budgets import Budgets
from users_service.emails import normalize_email
from users_service.passwords import check_password
from users_service.policies import KeyPolicy, NoExpiryFor, RecoveryPolicy

# Development only: `make run` works out of the box; production refuses both (see below).
DEV_SIGNING_KEY_FILE = Path("var/dev-signing-key.pem")
DEV_ADMIN_EMAIL = "admin@example.com"
DEV_ADMIN_PASSWORD = "dev-admin-password"  # noqa: S105 - documented, refused in production

# OWASP's floor for Argon2id (19 MiB, 2 passes): production may not go below it.
MIN_PRODUCTION_MEMORY_KIB = 19 * 1024
MIN_PRODUCTION_TIME_COST = 2
DAY_S = 24 * 3600

# Failed logins per account from every address, unless set: this many addresses' worth, so
# that no single address can use up the account's budget and lock its owner out.
ACCOUNT_CEILING_FACTOR = 10

# A user body is under 4 KiB; the platform's 1 MiB would only let bigger bodies cost more.
DEFAULT_MAX_BODY_BYTES = 16 * 1024


class AdminPasswordFileError(ConfigurationError):
    """ADMIN_PASSWORD_FILE names no usable password (unreadable, too short or too long)."""


class AdminCredentials(NamedTuple):
    email: str
    password: SecretStr


class Settings(ServiceSettings, TokenSettings, PublisherSettings, MailSettings):
    """Issuer and audience come from TokenSettings, shared with every verifier of our tokens."""

    port: int = Field(default=8001, validation_alias="USERS_PORT")
    # Published outbox rows are kept a day, not EVENTS_HISTORY_RETENTION_S: users-service
    # serves no event history, and its events carry names and emails (a deleted user's too).
    events_history_retention_s: float = Field(
        default=24 * 3600.0, gt=0, validation_alias="USERS_OUTBOX_RETENTION_S"
    )
    # Its own limit under the platform's MAX_BODY_BYTES (1 MiB, set for every service).
    users_max_body_bytes: int = Field(
        default=DEFAULT_MAX_BODY_BYTES, gt=0, validation_alias="USERS_MAX_BODY_BYTES"
    )
    database_url: str = Field(
        default="sqlite://var/users.sqlite3", validation_alias="USERS_DATABASE_URL"
    )
    access_token_ttl_s: int = Field(
        default=900, ge=60, le=24 * 3600, validation_alias="ACCESS_TOKEN_TTL_S"
    )
    refresh_token_ttl_s: int = Field(
        default=30 * DAY_S, ge=60, validation_alias="REFRESH_TOKEN_TTL_S"
    )
    # A session ends this long after its login however often it is refreshed.
    session_max_lifetime_s: int = Field(
        default=90 * DAY_S, ge=60, validation_alias="SESSION_MAX_LIFETIME_S"
    )
    session_purge_interval_s: float = Field(
        default=3600.0, gt=0, validation_alias="SESSION_PURGE_INTERVAL_S"
    )
    jwt_private_key_file: Path | None = Field(default=None, validation_alias="JWT_PRIVATE_KEY_FILE")
    # Public keys of retired signing keys, still published so their tokens stay valid.
    jwt_public_key_files: CommaList[tuple[Path, ...]] = Field(
        default=(), validation_alias="JWT_PUBLIC_KEY_FILES"
    )
    admin_email: str | None = Field(default=None, validation_alias="ADMIN_EMAIL")
    admin_password: SecretStr | None = Field(default=None, validation_alias="ADMIN_PASSWORD")
    # The same, from a file (a mounted secret): the only way production takes it, since an
    # environment variable is seen by every child process and many crash reports.
    admin_password_file: Path | None = Field(default=None, validation_alias="ADMIN_PASSWORD_FILE")
    # Argon2id cost: the defaults are argon2-cffi's (RFC 9106 low-memory profile);
    # tests lower them to keep the suite fast.
    argon2_time_cost: int = Field(
        default=DEFAULT_TIME_COST, ge=1, validation_alias="ARGON2_TIME_COST"
    )
    argon2_memory_kib: int = Field(
        default=DEFAULT_MEMORY_COST, ge=8, validation_alias="ARGON2_MEMORY_KIB"
    )
    argon2_parallelism: int = Field(
        default=DEFAULT_PARALLELISM, ge=1, validation_alias="ARGON2_PARALLELISM"
    )
    # How many hashes may hold their memory at once: the budget over one hash's memory,
    # unless ARGON2_SLOTS says so explicitly (see ``argon2_slots``).
    argon2_memory_budget_mib: int = Field(
        default=256, ge=1, validation_alias="ARGON2_MEMORY_BUDGET_MIB"
    )
    argon2_slots_override: int | None = Field(default=None, ge=1, validation_alias="ARGON2_SLOTS")
    # How long a request waits for a free slot before it is answered 503.
    argon2_slot_wait_s: float = Field(
        default=0.5, ge=0, le=30, validation_alias="ARGON2_SLOT_WAIT_S"
    )
    # The budgets only this service can charge (users_service.budgets): in Redis when set,
    # shared by every replica (and the gateway's Redis may be the same one), else in memory.
    redis_url: str | None = Field(default=None, validation_alias="REDIS_URL")
    # Failed logins per (account, client address), and per account from every address.
    login_account_rate_limit_per_minute: int = Field(
        default=10, ge=1, validation_alias="LOGIN_ACCOUNT_RATE_LIMIT_PER_MINUTE"
    )
    login_account_ceiling_per_minute: int | None = Field(
        default=None, ge=1, validation_alias="LOGIN_ACCOUNT_CEILING_PER_MINUTE"
    )
    # Refreshes per session, with that session's own tokens: a client refreshes once per
    # access-token lifetime; a loop or a thief many times more.
    refresh_session_rate_limit_per_minute: int = Field(
        default=6, ge=1, validation_alias="REFRESH_SESSION_RATE_LIMIT_PER_MINUTE"
    )
    # Password and email changes and self-deletions per client address (IPv6: per /48),
    # each a current-password check or a hash.
    credential_change_rate_limit_per_minute: int = Field(
        default=10, ge=1, validation_alias="CREDENTIAL_CHANGE_RATE_LIMIT_PER_MINUTE"
    )
    # Wrong current passwords per account within the window, from anywhere: what a stolen
    # access token may guess.
    current_password_failure_limit: int = Field(
        default=10, ge=1, validation_alias="CURRENT_PASSWORD_FAILURE_LIMIT"
    )
    current_password_failure_window_s: float = Field(
        default=900.0, gt=0, validation_alias="CURRENT_PASSWORD_FAILURE_WINDOW_S"
    )

    # Email verification and password reset: where the messages' links point, how long
    # their tokens live, how many an hour (docs/api.md#email-verification-and-password-reset).
    frontend_url: str = Field(default="http://localhost:8000", validation_alias="FRONTEND_URL")
    email_verification_ttl_s: int = Field(
        default=2 * DAY_S, ge=60, le=30 * DAY_S, validation_alias="EMAIL_VERIFICATION_TTL_S"
    )
    # At most an hour: a reset link is a password for whoever reads the mailbox.
    password_reset_ttl_s: int = Field(
        default=1800, ge=60, le=3600, validation_alias="PASSWORD_RESET_TTL_S"
    )
    verification_mails_per_hour: int = Field(
        default=3, ge=1, validation_alias="VERIFICATION_MAILS_PER_HOUR"
    )
    password_reset_mails_per_hour: int = Field(
        default=3, ge=1, validation_alias="PASSWORD_RESET_MAILS_PER_HOUR"
    )
    # How often queued reset requests are looked for (this process's are handled at once).
    reset_request_interval_s: float = Field(
        default=1.0, gt=0, validation_alias="RESET_REQUEST_INTERVAL_S"
    )

    # API keys (docs/api.md#api-keys): minting one needs a login (or the password) this
    # recent; a key lives at most this long, unless it is made by someone API_KEY_NO_EXPIRY_FOR
    # names, who may also ask for a key that never expires.
    recent_authentication_s: int = Field(
        default=600, ge=60, le=3600, validation_alias="RECENT_AUTHENTICATION_S"
    )
    api_key_max_lifetime_s: int = Field(
        default=365 * DAY_S, ge=3600, le=10 * 365 * DAY_S, validation_alias="API_KEY_MAX_LIFETIME_S"
    )
    api_key_no_expiry_for: NoExpiryFor = Field(
        default=NoExpiryFor.NOBODY, validation_alias="API_KEY_NO_EXPIRY_FOR"
    )

    @field_validator("admin_email")
    @classmethod
    def _normalize_admin_email(cls, value: str | None) -> str | None:
        return None if value is None else normalize_email(value)

    @field_validator("admin_password")
    @classmethod
    def _check_admin_password(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            check_password(value.get_secret_value())
        return value

    @model_validator(mode="after")
    def _refuse_unsafe_configuration(self) -> Settings:
        if self.admin_password is not None and self.admin_password_file is not None:
            raise ValueError("set ADMIN_PASSWORD or ADMIN_PASSWORD_FILE, not both")
        has_password = self.admin_password is not None or self.admin_password_file is not None
        if (self.admin_email is None) == has_password:
            raise ValueError(
                "ADMIN_EMAIL and ADMIN_PASSWORD_FILE (or ADMIN_PASSWORD) must be set together"
            )
        if not self.is_production:
            return self
        if self.admin_password is not None:
            raise ValueError(
                "ADMIN_PASSWORD is refused in production: put the password in a file (a "
                "mounted secret) and name it in ADMIN_PASSWORD_FILE"
            )
        if self.jwt_private_key_file is None:
            raise ValueError(
                "JWT_PRIVATE_KEY_FILE must name the Ed25519 signing key (PEM) when "
                "APP_ENV=production; the development key is never used in production"
            )
        if (
            self.argon2_memory_kib < MIN_PRODUCTION_MEMORY_KIB
            or self.argon2_time_cost < MIN_PRODUCTION_TIME_COST
        ):
            raise ValueError(
                f"Argon2 parameters below {MIN_PRODUCTION_MEMORY_KIB} KiB / "
                f"{MIN_PRODUCTION_TIME_COST} passes are refused in production"
            )
        return self

    @property
    def body_limit(self) -> int:
        """Bytes of request body accepted: the smaller of the service's and the platform's."""
        return min(self.users_max_body_bytes, self.max_body_bytes)

    @property
    def argon2_slots(self) -> int:
        """Hashes run at once: ARGON2_SLOTS, else as many as the memory budget holds (min 1)."""
        if self.argon2_slots_override is not None:
            return self.argon2_slots_override
        return max(1, self.argon2_memory_budget_mib * 1024 // self.argon2_memory_kib)

    @property
    def budgets(self) -> Budgets:
        """The policies of users-service's own rate limits."""
        per_account = self.login_account_rate_limit_per_minute
        return Budgets.of(
            login_account_per_minute=per_account,
            login_account_ceiling_per_minute=self.login_account_ceiling_per_minute
            or per_account * ACCOUNT_CEILING_FACTOR,
            refresh_session_per_minute=self.refresh_session_rate_limit_per_minute,
            credential_change_per_minute=self.credential_change_rate_limit_per_minute,
            current_password_failures=self.current_password_failure_limit,
            current_password_window_s=self.current_password_failure_window_s,
        )

    @property
    def recovery_policy(self) -> RecoveryPolicy:
        """Token lifetimes and hourly message limits of verification and reset."""
        return RecoveryPolicy(
            verification_ttl=timedelta(seconds=self.email_verification_ttl_s),
            reset_ttl=timedelta(seconds=self.password_reset_ttl_s),
            verification_mails_per_hour=self.verification_mails_per_hour,
            reset_mails_per_hour=self.password_reset_mails_per_hour,
        )

    @property
    def key_policy(self) -> KeyPolicy:
        """How recent a login minting a key must be, and how long a key may live."""
        return KeyPolicy(
            recent_authentication=timedelta(seconds=self.recent_authentication_s),
            max_lifetime=timedelta(seconds=self.api_key_max_lifetime_s),
            no_expiry_for=self.api_key_no_expiry_for,
        )

    @property
    def admin(self) -> AdminCredentials | None:
        """The admin to ensure at start-up: the configured one, or in development a default.

        ADMIN_PASSWORD_FILE is read here, when the service starts serving (``migrate`` does
        not need it): AdminPasswordFileError when it cannot be used.
        """
        if self.admin_email is not None and self.admin_password_file is not None:
            return AdminCredentials(self.admin_email, self._password_from_file())
        if self.admin_email is not None and self.admin_password is not None:
            return AdminCredentials(self.admin_email, self.admin_password)
        if self.is_production:
            return None
        return AdminCredentials(DEV_ADMIN_EMAIL, SecretStr(DEV_ADMIN_PASSWORD))

    def _password_from_file(self) -> SecretStr:
        path = self.admin_password_file
        assert path is not None
        try:
            # A file written by echo or an editor ends in a newline: not part of it.
            password = path.read_text(encoding="utf-8").rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as error:
            raise AdminPasswordFileError(
                f"ADMIN_PASSWORD_FILE {path} cannot be read ({error.__class__.__name__})"
            ) from None
        try:
            check_password(password)
        except ValueError as error:
            raise AdminPasswordFileError(f"the password in ADMIN_PASSWORD_FILE {error}") from None
        if self.is_production and password == DEV_ADMIN_PASSWORD:
            raise AdminPasswordFileError(
                "ADMIN_PASSWORD_FILE must not hold the development password in production"
            )
        return SecretStr(password)
