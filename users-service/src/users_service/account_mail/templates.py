"""The messages users-service mails, in plain text and HTML: the one place their words live.

Each carries a link to the front end (``FRONTEND_URL``) whose query holds ``token=<token>``;
the front end posts the token back to the API. Every value put into the HTML is escaped.

The verification and reset messages carry no text a user typed, the name included: they go
to addresses nobody has proven yet (a sign-up's, a new email's, a squatted account's), and
anyone may sign up with any address, so a name there was an anonymous stranger's words in
the platform's mail. Their only variable parts are the platform's link (``FRONTEND_URL``,
a fixed path, the token the platform made) and the platform's numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from urllib.parse import urlencode

from api_shared.mail.message import Mail

VERIFY_PATH = "/verify-email"
RESET_PATH = "/reset-password"
NO_KEYS = "The account holds no API keys."
KEYS_STILL_ACTIVE = "API keys still active (a password change does not end them):"


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


def verification_mail(*, to: str, link: str, valid_hours: float) -> Mail:
    """Confirm that ``to`` is the user's address (no name: the module's docstring)."""
    text = (
        "Hello,\n\n"
        "Please confirm that this is your email address by opening this link:\n\n"
        f"{link}\n\n"
        f"The link works once, for {_hours(valid_hours)}. If you did not sign up or change "
        "your email, ignore this message: nothing changes.\n"
    )
    html = _page(
        "<p>Hello,</p>"
        "<p>Please confirm that this is your email address:</p>"
        f'<p><a href="{escape(link)}">Confirm my email address</a></p>'
        f"<p>The link works once, for {_hours(valid_hours)}. If you did not sign up or change "
        "your email, ignore this message: nothing changes.</p>"
    )
    return Mail(to=to, subject="Confirm your email address", text=text, html=html)


def password_reset_mail(*, to: str, link: str, valid_minutes: float) -> Mail:
    """Set a new password; every session of the account ends when it is used. No name: the
    address may not be proven yet, and the name may be a squatter's (the module's docstring)."""
    text = (
        "Hello,\n\n"
        "Someone asked to reset the password of your account. To choose a new one, open "
        "this link:\n\n"
        f"{link}\n\n"
        f"The link works once, for {valid_minutes:g} minutes; a newer request replaces it. "
        "Every device logged in to the account will be logged out. If you did not ask for "
        "this, ignore this message: your password stays as it is.\n"
    )
    html = _page(
        "<p>Hello,</p>"
        "<p>Someone asked to reset the password of your account.</p>"
        f'<p><a href="{escape(link)}">Choose a new password</a></p>'
        f"<p>The link works once, for {valid_minutes:g} minutes; a newer request replaces it. "
        "Every device logged in to the account will be logged out. If you did not ask for "
        "this, ignore this message: your password stays as it is.</p>"
    )
    return Mail(to=to, subject="Reset your password", text=text, html=html)


@dataclass(frozen=True, slots=True)
class ActiveKey:
    """An API key as the password notice lists it."""

    name: str
    prefix: str
    scopes: tuple[str, ...]
    last_used_at: datetime | None
    expires_at: datetime | None


def password_notice_mail(
    *, to: str, name: str, keys: Sequence[ActiveKey], revoked_keys: int | None
) -> Mail:
    """The password of the account changed (a change, or a reset): what still works.

    ``revoked_keys`` is set when the reset was a claim: the account had been opened by
    someone else with this address, and everything of theirs is gone. Otherwise the keys the
    account still holds are listed (a password change does not end them), with how to revoke
    them all at once, and what to do when the change was not the reader's. It shows text the
    account chose (its name, its keys' names): ``AccountMail`` sends it to a verified address
    only.
    """
    if revoked_keys is not None:
        subject = "Your account is yours"
        before = [
            "The password of your account is set, and the account is yours: it had been "
            "opened with your address by someone who had not confirmed it.",
            f"Everything they had set up is gone: {_count(revoked_keys, 'API key')} revoked, "
            "every session ended, every webhook endpoint disabled (disabledReason "
            "account-claimed: delete those you do not recognise), every event stream ended, "
            f'and the account\'s name reset to "{name}".',
        ]
        after: list[str] = []
    else:
        subject = "Your password was changed"
        before = [
            "The password of your account was changed. Every other device logged in to it "
            "was logged out."
        ]
        after = [
            "Webhook endpoints registered by the account keep receiving events: "
            "GET /api/webhooks lists them.",
            "If you did not change it, ask for a password reset now (POST "
            "/api/password-reset-requests), then revoke every API key at once with DELETE "
            "/api/api-keys (one key: DELETE "
            "/api/api-keys/{id}), and disable each webhook endpoint you do not recognise with "
            'PATCH /api/webhooks/{id} {"enabled": false}, or delete it.',
        ]
    lines = [_key_line(key) for key in keys] if revoked_keys is None else None
    text = "\n\n".join(
        [f"Hello {name},", *before, *([_keys_text(lines)] if lines is not None else []), *after]
    )
    html = _page(
        f"<p>Hello {escape(name)},</p>"
        + "".join(f"<p>{escape(paragraph)}</p>" for paragraph in before)
        + (_keys_html(lines) if lines is not None else "")
        + "".join(f"<p>{escape(paragraph)}</p>" for paragraph in after)
    )
    return Mail(to=to, subject=subject, text=text + "\n", html=html)


def _keys_text(lines: Sequence[str]) -> str:
    if not lines:
        return NO_KEYS
    return KEYS_STILL_ACTIVE + "\n" + "\n".join(f"- {line}" for line in lines)


def _keys_html(lines: Sequence[str]) -> str:
    if not lines:
        return f"<p>{NO_KEYS}</p>"
    items = "".join(f"<li>{escape(line)}</li>" for line in lines)
    return f"<p>{KEYS_STILL_ACTIVE}</p><ul>{items}</ul>"


def _key_line(key: ActiveKey) -> str:
    used = f"last used {_when(key.last_used_at)}" if key.last_used_at else "never used"
    expires = f"expires {_when(key.expires_at)}" if key.expires_at else "never expires"
    return f'"{key.name}" ({key.prefix}…): {", ".join(key.scopes)}; {used}; {expires}'


def _when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _hours(hours: float) -> str:
    return "1 hour" if hours == 1 else f"{hours:g} hours"


def _page(body: str) -> str:
    return f'<!doctype html><html><body style="font-family: sans-serif">{body}</body></html>'
