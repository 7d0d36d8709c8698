"""The messages users-service mails, in plain text and HTML: the one place their words live.

Each carries a link to the front end (``FRONTEND_URL``) whose query holds ``token=<token>``;
the front end posts the token back to the API. Every value put into the HTML is escaped.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from urllib.parse import urlencode

from api_shared.mail.message import Mail

VERIFY_PATH = "/verify-email"
RESET_PATH = "/reset-password"


@dataclass(frozen=True, slots=True)
class Links:
    """Where the links of the messages point: the front end's address."""

    frontend_url: str

    def verify(self, token: str) -> str:
        return self._link(VERIFY_PATH, token)

    def reset(self, token: str) -> str:
        return self._link(RESET_PATH, token)

    def _link(self, path: str, token: str) -> str:
        return f"{self.frontend_url.rstrip('/')}{path}?{urlencode({'token': token})}"


def verification_mail(*, to: str, name: str, link: str, valid_hours: float) -> Mail:
    """Confirm that ``to`` is the user's address."""
    text = (
        f"Hello {name},\n\n"
        "Please confirm that this is your email address by opening this link:\n\n"
        f"{link}\n\n"
        f"The link works once, for {_hours(valid_hours)}. If you did not sign up or change "
        "your email, ignore this message: nothing changes.\n"
    )
    html = _page(
        f"<p>Hello {escape(name)},</p>"
        "<p>Please confirm that this is your email address:</p>"
        f'<p><a href="{escape(link)}">Confirm my email address</a></p>'
        f"<p>The link works once, for {_hours(valid_hours)}. If you did not sign up or change "
        "your email, ignore this message: nothing changes.</p>"
    )
    return Mail(to=to, subject="Confirm your email address", text=text, html=html)


def password_reset_mail(*, to: str, name: str, link: str, valid_minutes: float) -> Mail:
    """Set a new password; every session of the account ends when it is used."""
    text = (
        f"Hello {name},\n\n"
        "Someone asked to reset the password of your account. To choose a new one, open "
        "this link:\n\n"
        f"{link}\n\n"
        f"The link works once, for {valid_minutes:g} minutes; a newer request replaces it. "
        "Every device logged in to the account will be logged out. If you did not ask for "
        "this, ignore this message: your password stays as it is.\n"
    )
    html = _page(
        f"<p>Hello {escape(name)},</p>"
        "<p>Someone asked to reset the password of your account.</p>"
        f'<p><a href="{escape(link)}">Choose a new password</a></p>'
        f"<p>The link works once, for {valid_minutes:g} minutes; a newer request replaces it. "
        "Every device logged in to the account will be logged out. If you did not ask for "
        "this, ignore this message: your password stays as it is.</p>"
    )
    return Mail(to=to, subject="Reset your password", text=text, html=html)


def _hours(hours: float) -> str:
    return "1 hour" if hours == 1 else f"{hours:g} hours"


def _page(body: str) -> str:
    return f'<!doctype html><html><body style="font-family: sans-serif">{body}</body></html>'
