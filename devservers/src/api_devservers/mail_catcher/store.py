"""What the catcher keeps: each mail received, read into what the API shows, and the last
``capacity`` of them."""

from __future__ import annotations

import html
import re
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import getaddresses, parseaddr
from typing import Any

SNIPPET_LENGTH = 250  # Mailpit's
LINK = re.compile(r"https?://[^\s<>\"']+")


@dataclass(slots=True)
class CaughtMail:
    """One mail received, read into what the API shows."""

    id: str
    message_id: str
    sender: tuple[str, str]  # (name, address)
    recipients: list[tuple[str, str]]
    subject: str
    date: str
    text: str
    html: str
    size: int
    created: datetime
    read: bool = field(default=False)

    @property
    def links(self) -> list[str]:
        """The URLs in the text body, in order, each once."""
        return list(dict.fromkeys(link.rstrip(".,;:!?)]") for link in LINK.findall(self.text)))

    def summary(self) -> dict[str, Any]:
        """Mailpit's message summary (``GET /api/v1/messages``)."""
        return {
            "ID": self.id,
            "MessageID": self.message_id,
            "Read": self.read,
            "From": _address(self.sender),
            "To": [_address(r) for r in self.recipients],
            "Cc": [],
            "Bcc": [],
            "ReplyTo": [],
            "Subject": self.subject,
            "Created": rfc3339(self.created),
            "Tags": [],
            "Size": self.size,
            "Attachments": 0,
            "Snippet": snippet(self.text or _strip_tags(self.html)),
        }

    def detail(self) -> dict[str, Any]:
        """Mailpit's message (``GET /api/v1/message/{ID}``)."""
        return {
            "ID": self.id,
            "MessageID": self.message_id,
            "From": _address(self.sender),
            "To": [_address(r) for r in self.recipients],
            "Cc": [],
            "Bcc": [],
            "ReplyTo": [],
            "Subject": self.subject,
            "Date": self.date,
            "Text": self.text,
            "HTML": self.html,
            "Size": self.size,
            "Attachments": [],
            "Inline": [],
            "Tags": [],
        }


def read_mail(data: bytes, *, created: datetime | None = None) -> CaughtMail:
    """A received message's bytes, read. ``MessageID`` is the header without its angle
    brackets, as Mailpit shows it."""
    message = message_from_bytes(data, policy=policy.default)
    assert isinstance(message, EmailMessage)  # policy.default makes EmailMessages
    text_part = message.get_body(preferencelist=("plain",))
    html_part = message.get_body(preferencelist=("html",))
    return CaughtMail(
        id=uuid.uuid4().hex,
        message_id=str(message.get("Message-ID", "")).strip().strip("<>"),
        sender=parseaddr(str(message.get("From", ""))),
        recipients=getaddresses([str(value) for value in message.get_all("To", [])]),
        subject=str(message.get("Subject", "")),
        date=str(message.get("Date", "")),
        text=_content(text_part),
        html=_content(html_part),
        size=len(data),
        created=created or datetime.now(UTC),
    )


class MailStore:
    """The last ``capacity`` mails, newest first when listed; the oldest dropped first."""

    def __init__(self, capacity: int) -> None:
        self._mails: deque[CaughtMail] = deque(maxlen=capacity)

    def add(self, mail: CaughtMail) -> None:
        self._mails.append(mail)

    def newest_first(self) -> Iterator[CaughtMail]:
        return reversed(self._mails)

    def page(self, start: int, limit: int) -> list[CaughtMail]:
        return list(self.newest_first())[start : start + limit]

    def get(self, mail_id: str) -> CaughtMail | None:
        return next((mail for mail in self._mails if mail.id == mail_id), None)

    def clear(self) -> None:
        self._mails.clear()

    @property
    def total(self) -> int:
        return len(self._mails)

    @property
    def unread(self) -> int:
        return sum(not mail.read for mail in self._mails)


def rfc3339(moment: datetime) -> str:
    """``2026-01-02T03:04:05.678Z``, as Mailpit writes ``Created``."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def snippet(text: str) -> str:
    """The text's first ``SNIPPET_LENGTH`` characters, white space collapsed."""
    return " ".join(text.split())[:SNIPPET_LENGTH]


def _content(part: Any) -> str:
    if part is None:
        return ""
    content = part.get_content()
    return content if isinstance(content, str) else ""


def _strip_tags(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]*>", " ", markup))


def _address(pair: tuple[str, str]) -> dict[str, str]:
    return {"Name": pair[0], "Address": pair[1]}
