"""A development mail catcher, like Mailpit: an SMTP server that keeps what it receives in
memory, and an HTTP API (Mailpit's shape) and page to read it.

``python -m api_devservers.mail_catcher`` serves SMTP on ``MAIL_CATCHER_SMTP_PORT`` (1025)
and HTTP on ``MAIL_CATCHER_HTTP_PORT`` (8025), on ``MAIL_CATCHER_HOST`` (127.0.0.1); ``python
-m api_devservers.mail_catcher list`` prints the last mails and their links, read from the
HTTP API at ``MAIL_CATCHER_URL``. Tests start a ``MailCatcher`` in their own process.

Both servers run on one event loop (aiosmtpd's ``SMTP`` protocol served by
``loop.create_server``, aiohttp's web server beside it), so the store needs no lock. It keeps
the last ``MAIL_CATCHER_CAPACITY`` mails (500), the oldest dropped first; a mail over
``MAIL_CATCHER_MAX_BYTES`` (1 MiB) is refused by the SMTP server (552). Any login is accepted
(an ``SMTP_URL`` with a user works against it). For development only: it has no
authentication of its own.

- ``store``: a mail received, read (``CaughtMail``, ``read_mail``), and the ``MailStore``;
- ``smtp``: aiosmtpd's side: the handler that stores each mail, the any-login authenticator;
- ``server``: ``MailCatcher``, both servers from ``start`` to ``stop``, and the HTTP API;
- ``page``: the HTML page of the last mails;
- ``settings``: ``CatcherSettings`` (``MAIL_CATCHER_*``);
- ``cli``: ``serve``, and ``list`` (``list_mail``).
"""

from api_devservers.mail_catcher.cli import list_mail, main, serve
from api_devservers.mail_catcher.page import index_page
from api_devservers.mail_catcher.server import MailCatcher
from api_devservers.mail_catcher.settings import CatcherSettings
from api_devservers.mail_catcher.store import CaughtMail, MailStore, read_mail

__all__ = [
    "CatcherSettings",
    "CaughtMail",
    "MailCatcher",
    "MailStore",
    "index_page",
    "list_mail",
    "main",
    "read_mail",
    "serve",
]
