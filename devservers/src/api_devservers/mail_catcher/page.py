"""The catcher's page (``GET /``): the last mails, each with its links, everything escaped."""

from __future__ import annotations

import html
from collections.abc import Sequence

from api_devservers.mail_catcher.store import CaughtMail, rfc3339


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
