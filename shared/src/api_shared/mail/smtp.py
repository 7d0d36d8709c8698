"""Sending one mail over SMTP (aiosmtplib), and the message that goes on the wire."""

from __future__ import annotations

import logging
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime
from typing import Protocol, runtime_checkable

import aiosmtplib

from api_shared.mail.message import Mail
from api_shared.mail.settings import MailSettings, SmtpUrl

logger = logging.getLogger(__name__)

SMTP_TIMEOUT_S = 10.0


class Transport(Protocol):
    """Sends one message; raises when it was not accepted."""

    async def send(self, message: EmailMessage) -> None: ...


@runtime_checkable
class Closable(Protocol):
    """A transport that keeps a connection across sends: the sender closes it after a round."""

    async def close(self) -> None: ...


class MailRefusedError(Exception):
    """The server answered and refused this message (a recipient, its content): the next
    message may still go; unlike a connection error, which ends the round. ``permanent``
    (a 5xx answer): trying again would be refused again."""

    def __init__(self, reason: str, *, permanent: bool) -> None:
        super().__init__(reason)
        self.permanent = permanent


def build_message(mail: Mail, *, sender: str, message_id: str, date: datetime) -> EmailMessage:
    """``mail`` as a multipart/alternative message (text, then HTML: a reader shows the last
    part it can), with the headers a receiver needs, ``message_id`` among them."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = mail.to
    message["Subject"] = mail.subject
    message["Date"] = format_datetime(date)
    message["Message-ID"] = message_id
    message.set_content(mail.text)
    message.add_alternative(mail.html, subtype="html")
    return message


class SmtpTransport:
    """Sends through the server ``SMTP_URL`` names, one connection kept for a round's mails
    (``close`` ends it) and opened again when it was lost."""

    def __init__(self, settings: MailSettings, *, timeout_s: float = SMTP_TIMEOUT_S) -> None:
        smtp = settings.smtp
        if smtp is None:
            raise ValueError("SmtpTransport needs SMTP_URL")
        self.settings, self.smtp, self.timeout_s = settings, smtp, timeout_s
        self._client: aiosmtplib.SMTP | None = None

    async def send(self, message: EmailMessage) -> None:
        client = await self._connected()
        try:
            await client.send_message(message)
        except (aiosmtplib.SMTPRecipientsRefused, aiosmtplib.SMTPResponseException) as error:
            await self._reset(client)
            raise MailRefusedError(str(error), permanent=_permanent(error)) from error
        except Exception:
            await self.close()
            raise

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None and client.is_connected:
            try:
                await client.quit()
            except Exception:  # a server gone already: nothing to close politely
                client.close()

    async def _connected(self) -> aiosmtplib.SMTP:
        if self._client is not None and self._client.is_connected:
            return self._client
        self._client = None
        client = client_for(self.smtp, self.settings.smtp_password(), timeout_s=self.timeout_s)
        await client.connect()  # logs in too when a username is given
        self._client = client
        return client

    async def _reset(self, client: aiosmtplib.SMTP) -> None:
        """After a refused message, RSET, so that the connection serves the next one."""
        try:
            await client.rset()
        except Exception:
            await self.close()


def client_for(smtp: SmtpUrl, password: str | None, *, timeout_s: float) -> aiosmtplib.SMTP:
    """An aiosmtplib client for ``smtp``; STARTTLS is asked for, or refused, explicitly
    (aiosmtplib's default upgrades whenever offered, which fails on self-signed servers of
    development; a "none" URL means none)."""
    return aiosmtplib.SMTP(
        hostname=smtp.host,
        port=smtp.port,
        username=smtp.username,
        password=password if smtp.username else None,
        use_tls=smtp.tls == "tls",
        start_tls=smtp.tls == "starttls",
        timeout=timeout_s,
    )


def _permanent(error: aiosmtplib.SMTPRecipientsRefused | aiosmtplib.SMTPResponseException) -> bool:
    if isinstance(error, aiosmtplib.SMTPRecipientsRefused):
        return all(refusal.code >= 500 for refusal in error.recipients)
    return error.code >= 500
