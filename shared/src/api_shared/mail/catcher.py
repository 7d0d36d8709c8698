"""A development mail catcher, like Mailpit: an SMTP server that keeps what it receives in
memory, and an HTTP API (Mailpit's shape) and page to read it.

``python -m api_shared.mail.catcher`` serves SMTP on ``MAIL_CATCHER_SMTP_PORT`` (1025) and
HTTP on ``MAIL_CATCHER_HTTP_PORT`` (8025), on ``MAIL_CATCHER_HOST`` (127.0.0.1); ``python -m
api_shared.mail.catcher list`` prints the last mails and their links, read from the HTTP API
at ``MAIL_CATCHER_URL``. Tests start a ``MailCatcher`` in their own process.

Both servers run on one event loop (aiosmtpd's ``SMTP`` protocol served by
``loop.create_server``, aiohttp's web server beside it), so the store needs no lock. It keeps
the last ``MAIL_CATCHER_CAPACITY`` mails (500), the oldest dropped first; a mail over
``MAIL_CATCHER_MAX_BYTES`` (1 MiB) is refused by the SMTP server (552). Any login is accepted
(an ``SMTP_URL`` with a user works against it). For development only: it has no
authentication of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import html
import logging
import re
import signal
import sys
import urllib.request
import uuid
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import getaddresses, parseaddr
from typing import Any
from urllib.parse import urlsplit

import orjson
from aiohttp import web
from aiosmtpd.smtp import SMTP, AuthResult, Envelope, Session
from pydantic import Field

from api_shared.logging import configure_logging
from api_shared.settings import MIB, PlatformSettings

# Named, not __name__: run as ``python -m`` the module is __main__.
logger = logging.getLogger("api_shared.mail.catcher")

SERVICE = "mail-catcher"
SNIPPET_LENGTH = 250  # Mailpit's
PAGE_LIMIT = 50
LIST_TIMEOUT_S = 5.0
_LINK = re.compile(r"https?://[^\s<>\"']+")


class _QuietLegacyNotice(logging.Filter):
    """Drops aiosmtpd's notice that its own code reads a deprecated attribute at each login
    (it calls ``Session.login_data`` itself: nothing a caller can change)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "login_data is deprecated" not in record.getMessage()


AIOSMTPD_LOGGER = logging.getLogger("mail.log")
AIOSMTPD_LOGGER.addFilter(_QuietLegacyNotice())


class CatcherSettings(PlatformSettings):
    """Where the catcher listens, and how much it keeps."""

    host: str = Field(default="127.0.0.1", validation_alias="MAIL_CATCHER_HOST")
    smtp_port: int = Field(default=1025, ge=0, le=65535, validation_alias="MAIL_CATCHER_SMTP_PORT")
    http_port: int = Field(default=8025, ge=0, le=65535, validation_alias="MAIL_CATCHER_HTTP_PORT")
    capacity: int = Field(default=500, ge=1, validation_alias="MAIL_CATCHER_CAPACITY")
    max_message_bytes: int = Field(default=MIB, ge=1, validation_alias="MAIL_CATCHER_MAX_BYTES")
    # Where ``list`` reads the API.
    url: str = Field(default="http://127.0.0.1:8025", validation_alias="MAIL_CATCHER_URL")
    log_level: str = Field(default="INFO", validation_alias="LOG_LEVEL")


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
        return list(dict.fromkeys(link.rstrip(".,;:!?)]") for link in _LINK.findall(self.text)))

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


class MailCatcher:
    """The SMTP and HTTP servers on the running event loop, from ``start`` to ``stop``."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        smtp_port: int = 1025,
        http_port: int = 8025,
        capacity: int = 500,
        max_message_bytes: int = MIB,
    ) -> None:
        self.host, self.smtp_port, self.http_port = host, smtp_port, http_port
        self.max_message_bytes = max_message_bytes
        self.store = MailStore(capacity)
        self._smtp: asyncio.Server | None = None
        self._sessions: set[SMTP] = set()
        self._http: web.AppRunner | None = None

    @classmethod
    def from_settings(cls, settings: CatcherSettings) -> MailCatcher:
        return cls(
            host=settings.host,
            smtp_port=settings.smtp_port,
            http_port=settings.http_port,
            capacity=settings.capacity,
            max_message_bytes=settings.max_message_bytes,
        )

    @property
    def smtp_url(self) -> str:
        return f"smtp://{self.host}:{self.smtp_port}"

    @property
    def http_url(self) -> str:
        return f"http://{self.host}:{self.http_port}"

    async def start(self) -> None:
        """Listen (HTTP first: the store is readable by the time mail can arrive)."""
        self._http = web.AppRunner(self.web_app(), access_log=None)
        await self._http.setup()
        await web.TCPSite(self._http, self.host, self.http_port).start()
        await self.start_smtp()
        logger.info("mail catcher listening", extra={"smtp": self.smtp_url, "http": self.http_url})

    async def stop(self) -> None:
        await self.stop_smtp()
        runner, self._http = self._http, None
        if runner is not None:
            await runner.cleanup()

    async def start_smtp(self) -> None:
        """The SMTP server alone (a test stops and starts it to play an outage)."""
        if self._smtp is None:
            loop = asyncio.get_running_loop()
            self._smtp = await loop.create_server(self._session, self.host, self.smtp_port)

    async def stop_smtp(self) -> None:
        """Stop listening and cut the connections open (as a server going down would)."""
        server, self._smtp = self._smtp, None
        if server is None:
            return
        server.close()
        for session in list(self._sessions):
            if session.transport is not None:
                session.transport.close()
        await server.wait_closed()

    def _session(self) -> SMTP:
        handler = CatchingHandler(self.store, self.http_url)
        session = _TrackedSMTP(
            handler,
            data_size_limit=self.max_message_bytes,
            hostname=SERVICE,  # not socket.getfqdn(), a lookup that blocks
            authenticator=accept_any_login,
            auth_require_tls=False,
            loop=asyncio.get_running_loop(),
        )
        session.sessions = self._sessions
        self._sessions.add(session)
        return session

    def web_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/api/v1/messages", self._list)
        app.router.add_delete("/api/v1/messages", self._delete_all)
        app.router.add_get("/api/v1/message/{id}", self._message)
        # Mailpit's liveness path, and the platform's probes (every process answers them).
        for path in ("/livez", "/health", "/ready"):
            app.router.add_get(path, _livez)
        app.router.add_get("/", self._index)
        return app

    async def _list(self, request: web.Request) -> web.Response:
        start = _int_query(request, "start", 0)
        limit = _int_query(request, "limit", PAGE_LIMIT)
        mails = self.store.page(start, limit)
        return _json(
            {
                "total": self.store.total,
                "unread": self.store.unread,
                "count": len(mails),
                "messages_count": self.store.total,
                "start": start,
                "tags": [],
                "messages": [mail.summary() for mail in mails],
            }
        )

    async def _message(self, request: web.Request) -> web.Response:
        mail = self.store.get(request.match_info["id"])
        if mail is None:
            return web.Response(status=404, text="message not found")
        mail.read = True  # as Mailpit: opening a message reads it
        return _json(mail.detail())

    async def _delete_all(self, request: web.Request) -> web.Response:
        self.store.clear()
        return web.Response(text="ok")

    async def _index(self, request: web.Request) -> web.Response:
        return web.Response(
            text=index_page(self.store.page(0, PAGE_LIMIT), self.store.total),
            content_type="text/html",
            headers={"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"},
        )


class _TrackedSMTP(SMTP):
    """An SMTP session that leaves its catcher's set of open sessions when it ends."""

    sessions: set[SMTP]

    def connection_lost(self, error: Exception | None) -> None:
        self.sessions.discard(self)
        super().connection_lost(error)


def index_page(mails: Sequence[CaughtMail], total: int) -> str:
    """The last mails as a page: time, recipients, subject, the links of each; all escaped."""
    rows = []
    for mail in mails:
        links = "".join(
            f'<li><a href="{html.escape(link, quote=True)}">{html.escape(link)}</a></li>'
            for link in mail.links
        )
        recipients = ", ".join(address for _, address in mail.recipients)
        rows.append(
            f"<tr><td>{html.escape(rfc3339(mail.created))}</td>"
            f"<td>{html.escape(recipients)}</td>"
            f"<td>{html.escape(mail.subject)}</td>"
            f"<td><ul>{links}</ul></td></tr>"
        )
    body = "".join(rows) or '<tr><td colspan="4">No mail yet.</td></tr>'
    return (
        '<!doctype html><html><head><meta charset="utf-8"><title>Mail catcher</title>'
        "<style>body{font-family:sans-serif}td{padding:4px 8px;vertical-align:top}</style>"
        f"</head><body><h1>Mail catcher</h1><p>{total} mail(s) kept, newest first.</p>"
        "<table><tr><th>received</th><th>to</th><th>subject</th><th>links</th></tr>"
        f"{body}</table></body></html>"
    )


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


def _int_query(request: web.Request, name: str, default: int) -> int:
    try:
        return max(0, int(request.query.get(name, default)))
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name} must be a whole number") from None


def _json(body: dict[str, Any]) -> web.Response:
    return web.Response(body=orjson.dumps(body), content_type="application/json")


async def _livez(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def serve(settings: CatcherSettings) -> None:
    """Run the catcher until SIGINT or SIGTERM."""
    AIOSMTPD_LOGGER.setLevel(logging.WARNING)  # not its line per SMTP command
    catcher = MailCatcher.from_settings(settings)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopping.set)
    await catcher.start()
    try:
        await stopping.wait()
    finally:
        await catcher.stop()


def fetch_json(url: str) -> Any:
    """GET ``url`` (http or https only) and read its JSON."""
    if urlsplit(url).scheme not in ("http", "https"):
        raise ValueError("MAIL_CATCHER_URL must be an http:// or https:// URL")
    with urllib.request.urlopen(url, timeout=LIST_TIMEOUT_S) as response:  # noqa: S310 (scheme checked)
        return orjson.loads(response.read())


def list_mail(base_url: str, limit: int) -> list[str]:
    """The last ``limit`` mails as lines: time, recipients, subject, then each link."""
    base = base_url.rstrip("/")
    listing = fetch_json(f"{base}/api/v1/messages?limit={limit}")
    lines: list[str] = []
    for summary in listing["messages"]:
        detail = fetch_json(f"{base}/api/v1/message/{summary['ID']}")
        recipients = ", ".join(to["Address"] for to in summary["To"])
        lines.append(f"{summary['Created']}  {recipients}  {summary['Subject']}")
        text = str(detail.get("Text", ""))
        lines.extend(f"    {link}" for link in dict.fromkeys(_LINK.findall(text)))
    if not lines:
        lines.append("No mail yet.")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m api_shared.mail.catcher",
        description="A development mail catcher (SMTP in, Mailpit's HTTP API out).",
    )
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("serve", help="run the SMTP and HTTP servers (the default)")
    lister = commands.add_parser("list", help="print the last mails and their links")
    lister.add_argument("--limit", type=int, default=10)
    args = parser.parse_args(argv)
    settings = CatcherSettings()
    if args.command == "list":
        try:
            lines = list_mail(settings.url, max(1, args.limit))
        except OSError as error:
            print(f"error: no mail catcher at {settings.url} ({error})", file=sys.stderr)
            return 1
        print("\n".join(lines))
        return 0
    configure_logging(SERVICE, settings.log_level)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
