"""How a service sends mail: ``SMTP_URL`` (where), ``SMTP_PASSWORD_FILE`` (its secret),
``MAIL_FROM`` (as whom), and the sender's pace.

``SMTP_URL`` is ``smtp://[user@]host[:port][?starttls=true]`` or ``smtps://[user@]host[:port]``:
plain SMTP (port 25), SMTP upgraded by STARTTLS (587), or TLS from the first byte (465).
Unset, nothing is sent: mail waits in the outbox (a warning says so at start).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal
from urllib.parse import parse_qsl, unquote, urlsplit

from pydantic import Field, field_validator, model_validator

from api_shared.mail.message import address_domain
from api_shared.settings import EnvironmentSettings

TlsMode = Literal["none", "starttls", "tls"]
DEFAULT_PORTS: dict[TlsMode, int] = {"none": 25, "starttls": 587, "tls": 465}
_TRUE, _FALSE = frozenset({"true", "1", "yes"}), frozenset({"false", "0", "no"})


@dataclass(frozen=True, slots=True)
class SmtpUrl:
    """``SMTP_URL`` read: where the server is, how the connection is secured, who logs in.

    The password (allowed in the URL in development only) is kept out of ``repr``.
    """

    host: str
    port: int
    tls: TlsMode
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, url: str) -> SmtpUrl:
        """``ValueError`` for anything but the forms the module names (a message without
        the URL itself: it may hold a password)."""
        parts = urlsplit(url.strip())
        if parts.scheme not in ("smtp", "smtps"):
            raise ValueError("SMTP_URL must start with smtp:// or smtps://")
        try:
            host, port = parts.hostname, parts.port
        except ValueError:
            raise ValueError("SMTP_URL has a port that is not a number from 1 to 65535") from None
        if not host:
            raise ValueError("SMTP_URL names no host")
        if parts.path not in ("", "/") or parts.fragment:
            raise ValueError("SMTP_URL takes no path")
        tls: TlsMode = "tls" if parts.scheme == "smtps" else "none"
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            if name != "starttls":
                raise ValueError(f"SMTP_URL has an unknown option {name!r} (only starttls)")
            if value.lower() in _TRUE:
                if tls == "tls":
                    raise ValueError("smtps:// is TLS already; starttls=true goes with smtp://")
                tls = "starttls"
            elif value.lower() not in _FALSE:
                raise ValueError("SMTP_URL's starttls must be true or false")
        if port == 0:
            raise ValueError("SMTP_URL has a port that is not a number from 1 to 65535")
        return cls(
            host=host,
            port=port or DEFAULT_PORTS[tls],
            tls=tls,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password is not None else None,
        )


class MailSettings(EnvironmentSettings):
    """Mixed into the settings of each service that sends mail (users-service)."""

    family: ClassVar[str] = "Mail"

    smtp_url: str | None = Field(
        default=None,
        validation_alias="SMTP_URL",
        description="where the service's mail (users-service's verification and reset "
        "messages) is sent: `smtp://[user@]host[:port]` (25), "
        "`smtp://…:587?starttls=true`, `smtps://host[:465]`; unset: they wait in the mail "
        "outbox (a warning at start) and go once it is set",
        json_schema_extra={
            "shown_default": "unset (`make run`: `smtp://127.0.0.1:1025`, its mail catcher)"
        },
    )
    # The SMTP password, from a file only (a mounted secret): never in the environment.
    smtp_password_file: Path | None = Field(
        default=None,
        validation_alias="SMTP_PASSWORD_FILE",
        description="the SMTP password, in a file (a mounted secret); production refuses a "
        "password inside `SMTP_URL`",
    )
    mail_from: str = Field(
        default="API platform <no-reply@localhost>",
        validation_alias="MAIL_FROM",
        description="the messages' `From`; its domain ends every `Message-ID`",
    )
    # Idle pause between the sender's rounds (a recorded mail goes out within it).
    mail_send_interval_s: float = Field(
        default=0.5,
        gt=0,
        validation_alias="MAIL_SEND_INTERVAL_S",
        description="the sender's idle pause",
    )
    # Attempts per mail before the sender gives it up (its row stays, to look into): at the
    # backoff's 10-minute cap, 300 attempts ride out a mail server down for about two days.
    mail_max_attempts: int = Field(
        default=300,
        ge=1,
        validation_alias="MAIL_MAX_ATTEMPTS",
        description="attempts per message (with backoff) before it is given up (kept, logged)",
        json_schema_extra={"default_note": "about two days at the backoff's 10-minute cap"},
    )
    # Sent rows are kept this long (to look into), then purged.
    mail_sent_retention_days: float = Field(
        default=7.0,
        gt=0,
        validation_alias="MAIL_SENT_RETENTION_DAYS",
        description="how long sent messages stay in the outbox",
    )

    @field_validator("smtp_url", "smtp_password_file", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        # Compose passes ``SMTP_URL: ${SMTP_URL:-}``: an empty variable means unset.
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _check_mail(self) -> MailSettings:
        address_domain(self.mail_from)  # a ValueError names the variable through pydantic
        if self.smtp_url is not None:
            smtp = SmtpUrl.parse(self.smtp_url)
            if smtp.password is not None and self.is_production:
                raise ValueError(
                    "SMTP_URL must not hold a password when APP_ENV=production: put it in "
                    "the file SMTP_PASSWORD_FILE names"
                )
        return self

    @property
    def smtp(self) -> SmtpUrl | None:
        """``SMTP_URL`` read; None when unset (nothing is sent)."""
        return None if self.smtp_url is None else SmtpUrl.parse(self.smtp_url)

    @property
    def mail_domain(self) -> str:
        """``MAIL_FROM``'s domain, which ends every Message-ID."""
        return address_domain(self.mail_from)

    def smtp_password(self) -> str | None:
        """The password to log in with: ``SMTP_PASSWORD_FILE``'s content (read at each
        call, so a rotated secret is taken up), else the URL's (development only)."""
        if self.smtp_password_file is not None:
            return self.smtp_password_file.read_text().rstrip("\r\n")
        smtp = self.smtp
        return None if smtp is None else smtp.password
