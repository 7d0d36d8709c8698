"""Email verification and password reset against the real database: the messages as the mail
outbox holds them (the SMTP side is api_shared.mail's, and the e2e suite's with a real
server), the tokens' single use, binding and expiry, and the reset queue."""

from __future__ import annotations

import asyncio
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import orjson
import pytest

from api_shared.events.models import OutboxEvent
from api_shared.mail.models import OutboxMail
from api_testkit.callers import bearer
from users_service.api_keys.repository import ApiKeyRepository
from users_service.models import AccountToken, ApiKey, PasswordResetRequest, User

NewAccount = Any  # the conftest fixture: async (role=..., name=...) -> Account
Account = Any
LINK = re.compile(r"https?://\S+token=\S+")


async def mails_to(email: str) -> list[OutboxMail]:
    return await OutboxMail.filter(recipient=email).order_by("id")


def token_in(mail: OutboxMail, path: str) -> str:
    """The token of the message's link to ``path`` (the text and the HTML carry the same)."""
    [link] = LINK.findall(mail.text)
    parts = urlsplit(link)
    assert parts.path == path
    token: str = parse_qs(parts.query)["token"][0]
    assert f"token={token}" in mail.html
    return token


async def until_mailed(email: str, count: int) -> list[OutboxMail]:
    """The reset queue is handled beside the request: wait (bounded) for the message."""
    for _ in range(100):
        mails = await mails_to(email)
        if len(mails) >= count:
            return mails
        await asyncio.sleep(0.05)
    raise AssertionError(f"{email} received {len(await mails_to(email))} messages, not {count}")


async def test_a_sign_up_mails_a_link_that_verifies_the_address_once(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account = await new_account()
    me = await client.get("/api/users/me", headers=account.headers)
    assert me.json()["data"]["emailVerified"] is False

    [mail] = await mails_to(account.email)
    assert mail.subject == "Confirm your email address"
    token = token_in(mail, "/verify-email")
    assert await AccountToken.filter(token_hash=token).count() == 0  # stored hashed only

    first = await client.post("/api/email-verifications", json={"token": token})
    again = await client.post("/api/email-verifications", json={"token": token})

    assert first.status_code == 204
    assert again.status_code == 400
    assert again.json()["error"]["fields"] == {
        "token": "is invalid, used or expired; ask for a new message"
    }
    me = await client.get("/api/users/me", headers=account.headers)
    assert me.json()["data"]["emailVerified"] is True
    rows = await OutboxEvent.filter(subject=account.id).order_by("sequence")
    updated = orjson.loads(rows[-1].document)
    assert (updated["type"], updated["data"]["emailVerified"]) == ("users.user.updated", True)


async def test_a_verification_token_is_bound_to_the_address_it_was_sent_to(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account = await new_account()
    [mail] = await mails_to(account.email)
    new_email = f"moved-{uuid.uuid4().hex[:8]}@example.com"
    changed = await client.patch(
        f"/api/users/{account.id}",
        json={"email": new_email, "currentPassword": account.password},
        headers=account.headers,
    )
    assert changed.status_code == 200
    assert changed.json()["data"]["emailVerified"] is False

    old = await client.post(
        "/api/email-verifications", json={"token": token_in(mail, "/verify-email")}
    )

    assert old.status_code == 400
    [new_mail] = await mails_to(new_email)  # the new address gets its own link
    new = await client.post(
        "/api/email-verifications", json={"token": token_in(new_mail, "/verify-email")}
    )
    assert new.status_code == 204


async def test_expired_and_forged_verification_tokens_are_refused(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account = await new_account()
    [mail] = await mails_to(account.email)
    token = token_in(mail, "/verify-email")
    await AccountToken.filter(email=account.email).update(
        expires_at=datetime.now(UTC) - timedelta(seconds=1)
    )

    expired = await client.post("/api/email-verifications", json={"token": token})
    forged = await client.post("/api/email-verifications", json={"token": token[:-2] + "xx"})
    too_long = await client.post("/api/email-verifications", json={"token": "x" * 10_000})

    assert (expired.status_code, forged.status_code, too_long.status_code) == (400, 400, 400)
    me = await client.get("/api/users/me", headers=account.headers)
    assert me.json()["data"]["emailVerified"] is False


async def test_asking_for_a_new_verification_message_is_limited_per_hour(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account = await new_account()  # its sign-up message counts: 2 more within the hour

    answers = [
        (await client.post("/api/email-verification-requests", headers=account.headers))
        for _ in range(3)
    ]

    assert [answer.status_code for answer in answers] == [202, 202, 429]
    assert answers[-1].json()["error"]["code"] == "RATE_LIMITED"
    assert int(answers[-1].headers["retry-after"]) > 0
    assert len(await mails_to(account.email)) == 3


async def test_a_verified_address_needs_no_new_message(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account = await new_account()
    [mail] = await mails_to(account.email)
    await client.post("/api/email-verifications", json={"token": token_in(mail, "/verify-email")})

    answer = await client.post("/api/email-verification-requests", headers=account.headers)

    assert answer.status_code == 409
    assert answer.json()["error"]["code"] == "INVALID_STATE"


async def test_a_password_reset_sets_the_password_ends_sessions_and_works_once(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account = await new_account()
    login = await client.post(
        "/api/auth/token", json={"email": account.email, "password": account.password}
    )
    refresh_token = login.json()["data"]["refreshToken"]

    asked = await client.post("/api/password-reset-requests", json={"email": account.email})
    assert (asked.status_code, asked.content) == (202, b"")
    _, reset_mail = await until_mailed(account.email, 2)
    token = token_in(reset_mail, "/reset-password")
    reset = await client.post(
        "/api/password-resets", json={"token": token, "password": "a brand new password"}
    )
    again = await client.post(
        "/api/password-resets", json={"token": token, "password": "another new password"}
    )

    assert reset.status_code == 204
    assert again.status_code == 400
    refreshed = await client.post("/api/auth/refresh", json={"refreshToken": refresh_token})
    assert refreshed.status_code == 401
    old = await client.post(
        "/api/auth/token", json={"email": account.email, "password": account.password}
    )
    new = await client.post(
        "/api/auth/token", json={"email": account.email, "password": "a brand new password"}
    )
    assert (old.status_code, new.status_code) == (401, 200)
    me = await client.get(
        "/api/users/me", headers={"Authorization": f"Bearer {new.json()['data']['accessToken']}"}
    )
    assert me.json()["data"]["emailVerified"] is True  # the mailbox's owner reset it


async def test_an_unknown_address_is_answered_like_a_known_one_and_mailed_nothing(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account = await new_account()
    unknown = f"nobody-{uuid.uuid4().hex[:8]}@example.com"

    known_answer = await client.post("/api/password-reset-requests", json={"email": account.email})
    unknown_answer = await client.post("/api/password-reset-requests", json={"email": unknown})

    assert (known_answer.status_code, known_answer.content) == (
        unknown_answer.status_code,
        unknown_answer.content,
    )
    assert {name for name in known_answer.headers} == {name for name in unknown_answer.headers}
    await until_mailed(account.email, 2)
    for _ in range(100):  # both requests handled, the unknown one without a message
        if not await PasswordResetRequest.filter(email=unknown, handled_at=None).exists():
            break
        await asyncio.sleep(0.05)
    assert await PasswordResetRequest.filter(email=unknown, handled_at=None).count() == 0
    assert await mails_to(unknown) == []


async def test_a_newer_reset_request_or_a_password_change_voids_a_reset_link(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account = await new_account()
    await client.post("/api/password-reset-requests", json={"email": account.email})
    _, first = await until_mailed(account.email, 2)
    await client.post("/api/password-reset-requests", json={"email": account.email})
    _, _, second = await until_mailed(account.email, 3)
    changed = await client.patch(
        f"/api/users/{account.id}",
        json={"password": "changed by the owner", "currentPassword": account.password},
        headers=account.headers,
    )
    assert changed.status_code == 200

    for mail in (first, second):
        answer = await client.post(
            "/api/password-resets",
            json={"token": token_in(mail, "/reset-password"), "password": "the attacker's one"},
        )
        assert answer.status_code == 400


async def test_reset_messages_are_limited_per_address_per_hour(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account = await new_account()

    for _ in range(5):
        answer = await client.post("/api/password-reset-requests", json={"email": account.email})
        assert answer.status_code == 202
    for _ in range(100):
        if not await PasswordResetRequest.filter(email=account.email, handled_at=None).exists():
            break
        await asyncio.sleep(0.05)

    assert len(await mails_to(account.email)) == 1 + 3  # the sign-up's, then 3 resets


async def test_a_reset_token_names_its_own_account_only(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    victim, attacker = await new_account(), await new_account()
    await client.post("/api/password-reset-requests", json={"email": attacker.email})
    _, mail = await until_mailed(attacker.email, 2)

    await client.post(
        "/api/password-resets",
        json={"token": token_in(mail, "/reset-password"), "password": "attacker chose this"},
    )

    victim_login = await client.post(
        "/api/auth/token", json={"email": victim.email, "password": "attacker chose this"}
    )
    assert victim_login.status_code == 401
    still = await client.post(
        "/api/auth/token", json={"email": victim.email, "password": victim.password}
    )
    assert still.status_code == 200


async def test_a_suspended_account_cannot_reset_its_password(
    client: httpx.AsyncClient, new_account: NewAccount, admin: Account
) -> None:
    account = await new_account()
    await client.post("/api/password-reset-requests", json={"email": account.email})
    _, mail = await until_mailed(account.email, 2)
    suspended = await client.patch(
        f"/api/users/{account.id}", json={"isActive": False}, headers=admin.headers
    )
    assert suspended.status_code == 200

    answer = await client.post(
        "/api/password-resets",
        json={"token": token_in(mail, "/reset-password"), "password": "a brand new password"},
    )

    assert answer.status_code == 403
    assert answer.json()["error"]["code"] == "FORBIDDEN"


async def test_a_weak_new_password_is_refused_and_the_token_kept(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account = await new_account()
    await client.post("/api/password-reset-requests", json={"email": account.email})
    _, mail = await until_mailed(account.email, 2)
    token = token_in(mail, "/reset-password")

    weak = await client.post("/api/password-resets", json={"token": token, "password": "short"})
    good = await client.post(
        "/api/password-resets", json={"token": token, "password": "a long enough one"}
    )

    assert weak.status_code == 400
    assert "password" in weak.json()["error"]["fields"]
    assert good.status_code == 204


# --- a claim, the notice of what still works, tokens voided by an email change ------------------


async def reset_token(client: httpx.AsyncClient, email: str) -> str:
    """Ask for a reset of ``email`` and read the link it is mailed."""
    before = len(await mails_to(email))
    await client.post("/api/password-reset-requests", json={"email": email})
    mails = await until_mailed(email, before + 1)
    return token_in(mails[-1], "/reset-password")


async def verify(client: httpx.AsyncClient, account: Account) -> None:
    """Redeem the sign-up's verification link: the address is the account holder's."""
    [mail] = await mails_to(account.email)
    verified = await client.post(
        "/api/email-verifications", json={"token": token_in(mail, "/verify-email")}
    )
    assert verified.status_code == 204, verified.text


async def test_a_claim_leaves_nothing_of_whoever_signed_up_with_the_address(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    # The squatter signed up with the owner's address, never verified, and set things up.
    squatter = await new_account(name="Mallory")
    keys = [
        (await client.post("/api/api-keys", json=body, headers=squatter.headers)).json()["data"]
        for body in (
            {"name": "exfiltrate", "scopes": ["users:read", "orders:read"]},
            {"name": "mint more", "scopes": ["api-keys:write"]},
        )
    ]
    token = await reset_token(client, squatter.email)  # the mailbox's owner reads this

    reset = await client.post(
        "/api/password-resets", json={"token": token, "password": "the owner's own password"}
    )

    assert reset.status_code == 204, reset.text
    for key in keys:  # refused here at once (elsewhere within STANDING_CACHE_S)
        refused = await client.get("/api/api-keys/current", headers=bearer(key["secret"]))
        assert refused.status_code == 401, refused.text
    assert not await ApiKey.exists(user_id=squatter.id)
    ended = await client.get("/api/users/me", headers=squatter.headers)
    assert ended.status_code == 401, ended.text
    user = await User.get(id=squatter.id)
    assert (user.name, user.email_verified) == (squatter.email.split("@")[0], True)
    documents = [
        orjson.loads(row.document)
        for row in await OutboxEvent.filter(subject=squatter.id).order_by("sequence")
    ]
    claimed, updated = documents[-2:]
    assert (claimed["type"], claimed["data"]) == ("users.user.claimed", {"id": squatter.id})
    assert updated["type"] == "users.user.updated"
    assert (updated["data"]["name"], updated["data"]["emailVerified"]) == (user.name, True)
    notice = (await mails_to(squatter.email))[-1]
    assert notice.subject == "Your account is yours"
    assert "2 API keys revoked" in notice.text
    assert "Mallory" not in notice.text + notice.html
    assert "exfiltrate" not in notice.text + notice.html


async def test_a_claim_that_fails_midway_leaves_the_account_as_it_was(
    client: httpx.AsyncClient, new_account: NewAccount, monkeypatch: pytest.MonkeyPatch
) -> None:
    squatter = await new_account(name="Mallory")
    key = await client.post(
        "/api/api-keys", json={"name": "k", "scopes": ["users:read"]}, headers=squatter.headers
    )
    token = await reset_token(client, squatter.email)
    events_before = await OutboxEvent.filter(subject=squatter.id).count()

    async def crash(self: ApiKeyRepository, user_id: uuid.UUID) -> int:
        await ApiKey.filter(user_id=user_id).delete()
        raise RuntimeError("the process died here")  # after the keys, before the commit

    monkeypatch.setattr(ApiKeyRepository, "delete_all", crash)
    failed = await client.post(
        "/api/password-resets", json={"token": token, "password": "the owner's own password"}
    )
    monkeypatch.undo()

    assert failed.status_code == 500
    user = await User.get(id=squatter.id)
    assert (user.name, user.email_verified) == ("Mallory", False)
    assert await ApiKey.exists(id=key.json()["data"]["id"])
    assert await OutboxEvent.filter(subject=squatter.id).count() == events_before
    old_password = await client.post(
        "/api/auth/token", json={"email": squatter.email, "password": squatter.password}
    )
    assert old_password.status_code == 200
    retried = await client.post(  # the token was not spent either: the owner tries again
        "/api/password-resets", json={"token": token, "password": "the owner's own password"}
    )
    assert retried.status_code == 204, retried.text
    assert not await ApiKey.exists(user_id=squatter.id)


async def test_a_verified_owners_reset_keeps_their_keys_and_mails_what_still_works(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    owner = await new_account(name="Ada")
    await verify(client, owner)
    key = await client.post(
        "/api/api-keys",
        json={"name": "back office", "scopes": ["orders:read", "users:read"]},
        headers=owner.headers,
    )
    token = await reset_token(client, owner.email)

    reset = await client.post(
        "/api/password-resets", json={"token": token, "password": "a fresh password"}
    )

    assert reset.status_code == 204, reset.text
    still = await client.get("/api/users/me", headers=bearer(key.json()["data"]["secret"]))
    assert still.status_code == 200, still.text
    assert still.json()["data"]["name"] == "Ada"
    assert not await OutboxEvent.filter(subject=owner.id, type="users.user.claimed").exists()
    notice = (await mails_to(owner.email))[-1]
    assert notice.subject == "Your password was changed"
    prefix = key.json()["data"]["prefix"]
    assert f'"back office" ({prefix}…): orders:read, users:read; never used' in notice.text
    assert "DELETE /api/api-keys" in notice.text
    assert "webhook" in notice.text
    assert "back office" in notice.html


async def test_a_password_change_notifies_a_verified_address_only(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    verified, unverified = await new_account(), await new_account()
    await verify(client, verified)
    for account in (verified, unverified):
        changed = await client.patch(
            f"/api/users/{account.id}",
            json={"password": "changed by the owner", "currentPassword": account.password},
            headers=account.headers,
        )
        assert changed.status_code == 200, changed.text

    assert [m.subject for m in await mails_to(verified.email)][-1] == "Your password was changed"
    # An unverified mailbox is not known to be the holder's: nothing of theirs is sent to it.
    assert [m.subject for m in await mails_to(unverified.email)] == ["Confirm your email address"]


async def test_an_email_change_voids_earlier_tokens_for_good(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account = await new_account()
    [first_verification] = await mails_to(account.email)
    reset = await reset_token(client, account.email)
    elsewhere = f"elsewhere-{uuid.uuid4().hex[:8]}@example.com"

    for email in (elsewhere, account.email):  # A → B → A
        moved = await client.patch(
            f"/api/users/{account.id}",
            json={"email": email, "currentPassword": account.password},
            headers=account.headers,
        )
        assert moved.status_code == 200, moved.text

    old_verification = await client.post(
        "/api/email-verifications", json={"token": token_in(first_verification, "/verify-email")}
    )
    old_reset = await client.post(
        "/api/password-resets", json={"token": reset, "password": "the attacker's choice"}
    )
    latest = (await mails_to(account.email))[-1]  # the link mailed when A came back works
    new_verification = await client.post(
        "/api/email-verifications", json={"token": token_in(latest, "/verify-email")}
    )

    assert old_verification.status_code == 400, old_verification.text
    assert old_reset.status_code == 400, old_reset.text
    assert new_verification.status_code == 204, new_verification.text
