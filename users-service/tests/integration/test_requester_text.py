"""Text a requester chose, against the real database (docs/api.md#users and
#email-verification-and-password-reset): a name holds no control, separator or bidi
character wherever one is accepted, and no message to an address carries a name, whether
the address is proven or not, nor any link but the platform's one."""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import httpx
import pytest

from api_shared.mail.models import OutboxMail
from users_service.models import User
from users_service.settings import Settings

NewAccount = Any  # the conftest fixture: async (role=..., name=...) -> Account
Account = Any
URL = re.compile(r"(?:https?:)?//[^\s\"'<>]+|www\.[^\s\"'<>]+", re.IGNORECASE)
# What a phisher puts in a name: a call to action and a link, in lines of their own.
PHISHING = {
    "a line feed": "Ada\n\nYour account is locked: https://evil.example/unlock",
    "a carriage return": "Ada\rSupport: https://evil.example",
    "a line separator": "Ada\u2028https://evil.example",
    "a paragraph separator": "Ada\u2029https://evil.example",
    "a next line (C1)": "Ada\u0085https://evil.example",
    "a right-to-left override": "Ada \u202elpmaxe.live//:sptth",
    "a right-to-left isolate": "Ada \u2067https://evil.example\u2069",
    "a zero-width space": "Ad\u200ba",
}
# Allowed in a name (no character of api_shared.text), and still never mailed.
LEGAL_BUT_HOSTILE = "Support team: verify at https://evil.example/verify now"


def an_email() -> str:
    return f"user-{uuid.uuid4().hex[:10]}@example.com"


def refused_for_name(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_FAILED"
    assert list(error["fields"]) == ["name"]
    message: str = error["fields"]["name"]
    assert message.startswith("must not contain control, line-separator, bidirectional")
    return message


@pytest.mark.parametrize("name", PHISHING.values(), ids=PHISHING.keys())
async def test_an_anonymous_sign_up_with_such_a_name_is_refused_and_mails_nothing(
    client: httpx.AsyncClient, name: str
) -> None:
    email = an_email()

    answer = await client.post(
        "/api/users", json={"name": name, "email": email, "password": "a long password"}
    )

    refused_for_name(answer)
    assert not await User.filter(email=email).exists()
    assert await OutboxMail.filter(recipient=email).count() == 0


async def test_an_admin_sign_up_a_rename_and_a_key_name_are_refused_alike(
    client: httpx.AsyncClient, admin: Account, new_account: NewAccount
) -> None:
    name = PHISHING["a line feed"]
    me = await new_account(name="Ada")

    by_admin = await client.post(
        "/api/users", json={"name": name, "email": an_email()}, headers=admin.headers
    )
    renamed = await client.patch(f"/api/users/{me.id}", json={"name": name}, headers=me.headers)
    key = await client.post(
        "/api/api-keys", json={"name": name, "scopes": ["orders:read"]}, headers=me.headers
    )

    assert refused_for_name(by_admin).endswith("(U+000A)")
    refused_for_name(renamed)
    refused_for_name(key)
    stored = await client.get("/api/users/me", headers=me.headers)
    assert stored.json()["data"]["name"] == "Ada"
    keys = await client.get("/api/api-keys", headers=me.headers)
    assert keys.json()["data"] == []


async def messages_to(email: str, count: int) -> list[OutboxMail]:
    """The first ``count`` messages to ``email`` (a reset is queued: wait, bounded)."""
    for _ in range(100):
        mails = await OutboxMail.filter(recipient=email).order_by("id")
        if len(mails) >= count:
            return list(mails[:count])
        await asyncio.sleep(0.05)
    raise AssertionError(f"{email} did not receive {count} messages")


def assert_carries_no_requester_text(mail: OutboxMail, name: str, frontend_url: str) -> None:
    for part in (mail.subject, mail.text, mail.html):
        assert name not in part
        assert "evil" not in part
    assert mail.text.startswith("Hello,\n")
    # One link in each part, the platform's: FRONTEND_URL, a fixed path, the token.
    for part in (mail.text, mail.html):
        (link,) = {found.rstrip(".,") for found in URL.findall(part)}
        assert re.fullmatch(
            re.escape(frontend_url) + r"/(verify-email|reset-password)\?token=[A-Za-z0-9_-]{43}",
            link,
        ), link


async def test_no_message_to_an_address_carries_the_name_or_a_foreign_link(
    client: httpx.AsyncClient, settings: Settings
) -> None:
    email, password = an_email(), "a long password"
    signed_up = await client.post(
        "/api/users", json={"name": LEGAL_BUT_HOSTILE, "email": email, "password": password}
    )
    assert signed_up.status_code == 201, signed_up.text
    login = await client.post("/api/auth/token", json={"email": email, "password": password})
    headers = {"Authorization": f"Bearer {login.json()['data']['accessToken']}"}
    moved_to = an_email()

    resent = await client.post("/api/email-verification-requests", headers=headers)
    asked = await client.post("/api/password-reset-requests", json={"email": email})
    moved = await client.patch(
        f"/api/users/{signed_up.json()['data']['id']}",
        json={"email": moved_to, "currentPassword": password},
        headers=headers,
    )

    assert (resent.status_code, asked.status_code, moved.status_code) == (202, 202, 200)
    sign_up_mail, resent_mail, reset_mail = await messages_to(email, 3)
    (moved_mail,) = await messages_to(moved_to, 1)
    assert [m.subject for m in (sign_up_mail, resent_mail, reset_mail, moved_mail)] == [
        "Confirm your email address",
        "Confirm your email address",
        "Reset your password",
        "Confirm your email address",
    ]
    for mail in (sign_up_mail, resent_mail, reset_mail, moved_mail):
        assert_carries_no_requester_text(mail, LEGAL_BUT_HOSTILE, settings.frontend_url)


async def test_a_name_stored_before_the_rule_is_kept_and_never_mailed(
    client: httpx.AsyncClient, new_account: NewAccount, settings: Settings
) -> None:
    account = await new_account(name="Ada")
    old_name = PHISHING["a line feed"]
    await User.filter(id=account.id).update(name=old_name)  # as an older release stored it

    me = await client.get("/api/users/me", headers=account.headers)
    resent = await client.post("/api/email-verification-requests", headers=account.headers)
    asked = await client.post("/api/password-reset-requests", json={"email": account.email})

    assert me.json()["data"]["name"] == old_name
    assert (resent.status_code, asked.status_code) == (202, 202)
    for mail in (await messages_to(account.email, 3))[1:]:
        assert_carries_no_requester_text(mail, old_name, settings.frontend_url)
