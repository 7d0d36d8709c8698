"""users-service settings, from the environment; unsafe production configuration is refused.

The families of settings are in the modules beside this one; ``Settings`` composes them with
the shared ones and makes the checks across families.
"""

from __future__ import annotations

from datetime import timedelta
from typing import NamedTuple

from pydantic import SecretStr, field_validator, model_validator

from api_shared.events.settings import PublisherSettings
from api_shared.mail.settings import MailSettings
from api_shared.settings import ConfigurationError, ServiceSettings, TokenSettings
from users_service.budgets import Budgets
from users_service.emails import normalize_email
from users_service.passwords import check_password
from users_service.policies import KeyPolicy, RecoveryPolicy
from users_service.settings.accounts import (
    DAY_S,
    DEV_ADMIN_EMAIL,
    DEV_ADMIN_PASSWORD,
    DEV_SIGNING_KEY_FILE,
    AdminSettings,
    DatabaseSettings,
    PortSettings,
    SessionSettings,
)
from users_service.settings.limits import ACCOUNT_CEILING_FACTOR, RateLimitSettings
from users_service.settings.mail import AccountMailSettings, OutboxSettings

__all__ = [
    "DAY_S",
    "DEV_ADMIN_EMAIL",
    "DEV_ADMIN_PASSWORD",
    "DEV_SIGNING_KEY_FILE",
    "AdminCredentials",
    "AdminPasswordFileError",
    "Settings",
]

# OWASP's floor for Argon2id (19 MiB, 2 passes): production may not go below it.
MIN_PRODUCTION_MEMORY_KIB = 19 * 1024
MIN_PRODUCTION_TIME_COST = 2


class AdminPasswordFileError(ConfigurationError):
    """ADMIN_PASSWORD_FILE names no usable password (unreadable, too short or too long)."""


class AdminCredentials(NamedTuple):
    email: str
    password: SecretStr


# users-service's own families come first: their fields override the shared classes'
# (``port``, ``events_history_retention_s``).
class Settings(
    DatabaseSettings,
    PortSettings,
    SessionSettings,
    AdminSettings,
    RateLimitSettings,
    AccountMailSettings,
    OutboxSettings,
    ServiceSettings,
    TokenSettings,
    PublisherSettings,
    MailSettings,
):
    """Issuer and audience come from TokenSettings, shared with every verifier of our tokens;
    the checks across families (the admin, production's refusals) are made here."""

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
