"""aiosmtpd's side of the catcher: each session's handler stores what it receives, and any
login is accepted."""

from __future__ import annotations

import logging
from typing import Any

from aiosmtpd.smtp import SMTP, AuthResult, Envelope, Session

from api_devservers.mail_catcher.store import MailStore, read_mail

# One name for the catcher's lines, whichever of its modules writes them.
logger = logging.getLogger("api_devservers.mail_catcher")

SERVICE = "mail-catcher"


class _QuietLegacyNotice(logging.Filter):
    """Drops aiosmtpd's notice that its own code reads a deprecated attribute at each login
    (it calls ``Session.login_data`` itself: nothing a caller can change)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "login_data is deprecated" not in record.getMessage()


AIOSMTPD_LOGGER = logging.getLogger("mail.log")
AIOSMTPD_LOGGER.addFilter(_QuietLegacyNotice())


class CatchingHandler:
    """aiosmtpd's handler: every mail received goes to the store."""

    def __init__(self, store: MailStore, http_url: str) -> None:
        self.store, self.http_url = store, http_url

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:  # noqa: N802 (aiosmtpd's name)
        data = envelope.original_content or b""
        try:
            mail = read_mail(data)
        except Exception:
            logger.warning("mail caught could not be read", exc_info=True)
            return "554 Transaction failed: the message could not be read"
        if not mail.recipients:  # no To header: whom the envelope named, as Mailpit shows
            mail.recipients = [("", address) for address in envelope.rcpt_tos]
        self.store.add(mail)
        logger.info(
            "mail caught",
            extra={
                "id": mail.id,
                "messageId": mail.message_id,
                "size": mail.size,
                "url": f"{self.http_url}/api/v1/message/{mail.id}",
            },
        )
        return "250 Message accepted for delivery"


def accept_any_login(
    server: SMTP, session: Session, envelope: Envelope, mechanism: str, data: Any
) -> AuthResult:
    """Development: any user and password log in (the sender's login path runs)."""
    return AuthResult(success=True)


class TrackedSMTP(SMTP):
    """An SMTP session that leaves its catcher's set of open sessions when it ends."""

    sessions: set[SMTP]

    def connection_lost(self, error: Exception | None) -> None:
        self.sessions.discard(self)
        super().connection_lost(error)
