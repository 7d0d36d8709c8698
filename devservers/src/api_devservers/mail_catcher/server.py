"""``MailCatcher``: the SMTP server and the HTTP API (Mailpit's routes) on the running event
loop, from ``start`` to ``stop``."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from aiohttp import web
from aiosmtpd.smtp import SMTP

from api_devservers.mail_catcher.page import index_page
from api_devservers.mail_catcher.settings import CatcherSettings
from api_devservers.mail_catcher.smtp import (
    SERVICE,
    CatchingHandler,
    TrackedSMTP,
    accept_any_login,
    logger,
)
from api_devservers.mail_catcher.store import MailStore
from api_shared.settings import MIB

PAGE_LIMIT = 50


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
        session = TrackedSMTP(
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


def _int_query(request: web.Request, name: str, default: int) -> int:
    try:
        return max(0, int(request.query.get(name, default)))
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name} must be a whole number") from None


def _json(body: dict[str, Any]) -> web.Response:
    return web.Response(body=orjson.dumps(body), content_type="application/json")


async def _livez(request: web.Request) -> web.Response:
    return web.Response(text="ok")
