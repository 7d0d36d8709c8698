"""Email verification and password reset end to end: through the gateway, users-service
mailing through its outbox over SMTP to the stack's real mail catcher, read back through
Mailpit's HTTP API, the way a person would click the links.

``processes``: the catcher's HTTP API is the process stack's (``Stack.mail``), and one test
stops the catcher.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from api_testkit.actors import PASSWORD, log_in, new_email, sign_up
from api_testkit.databases import execute_on
from api_testkit.events import eventually, read_stream
from api_testkit.mailbox import Mailbox, token_of
from api_testkit.stack import Stack

pytestmark = pytest.mark.processes

VERIFY, RESET = "/verify-email", "/reset-password"
NEW_PASSWORD = "a brand new passphrase"


@pytest.fixture
def mailbox(stack: Stack) -> Mailbox:
    return Mailbox(stack.mail_url)


async def me(gateway: httpx.AsyncClient, email: str, password: str) -> dict[str, Any]:
    token = (await log_in(gateway, email, password))["accessToken"]
    response = await gateway.get("/api/users/me", headers={"Authorization": f"Bearer {token}"})
    data: dict[str, Any] = response.json()["data"]
    return data


async def test_a_sign_up_is_verified_by_the_link_it_mails_and_the_events_say_so(
    gateway: httpx.AsyncClient, mailbox: Mailbox, stack: Stack
) -> None:
    email = new_email("verify")
    user = await sign_up(gateway, email=email, password=PASSWORD)
    assert user["emailVerified"] is False

    [message] = await mailbox.wait_for(email)
    assert message["Subject"] == "Confirm your email address"
    token = token_of(message, VERIFY)
    assert token in message["HTML"]
    verified = await gateway.post("/api/email-verifications", json={"token": token})
    again = await gateway.post("/api/email-verifications", json={"token": token})

    assert verified.status_code == 204
    assert again.status_code == 400
    assert again.json()["error"]["fields"]["token"].startswith("is invalid, used or expired")
    assert (await me(gateway, email, PASSWORD))["emailVerified"] is True

    async def updated_event_says_verified() -> bool:
        stored = await read_stream(stack.nats_login(), "USERS")
        return any(
            message.event.subject == user["id"]
            and message.event.type == "users.user.updated"
            and message.event.data["emailVerified"] is True
            for message in stored
        )

    await eventually(updated_event_says_verified, "users.user.updated with emailVerified")
    created = [
        message.event
        for message in await read_stream(stack.nats_login(), "USERS")
        if message.event.subject == user["id"] and message.event.type == "users.user.created"
    ]
    assert [event.data["emailVerified"] for event in created] == [False]


async def test_a_forgotten_password_is_reset_by_mail_ending_every_old_session(
    gateway: httpx.AsyncClient, mailbox: Mailbox
) -> None:
    email = new_email("reset")
    await sign_up(gateway, email=email, password=PASSWORD)
    old_session = await log_in(gateway, email)

    asked = await gateway.post("/api/password-reset-requests", json={"email": email})
    assert (asked.status_code, asked.content) == (202, b"")
    _, message = await mailbox.wait_for(email, 2)
    assert message["Subject"] == "Reset your password"
    token = token_of(message, RESET)
    reset = await gateway.post(
        "/api/password-resets", json={"token": token, "password": NEW_PASSWORD}
    )
    again = await gateway.post(
        "/api/password-resets", json={"token": token, "password": "yet another passphrase"}
    )

    assert reset.status_code == 204
    assert again.status_code == 400
    refreshed = await gateway.post(
        "/api/auth/refresh", json={"refreshToken": old_session["refreshToken"]}
    )
    assert refreshed.status_code == 401
    old_password = await gateway.post(
        "/api/auth/token", json={"email": email, "password": PASSWORD}
    )
    assert old_password.status_code == 401
    assert (await me(gateway, email, NEW_PASSWORD))["emailVerified"] is True


async def test_expired_and_forged_tokens_are_refused(
    gateway: httpx.AsyncClient, mailbox: Mailbox, stack: Stack
) -> None:
    email = new_email("expired")
    await sign_up(gateway, email=email, password=PASSWORD)
    await gateway.post("/api/password-reset-requests", json={"email": email})
    verification, reset = await mailbox.wait_for(email, 2)
    # Time passes, as the operator's clock would see it: every token of the address expires.
    await execute_on(
        stack.services["users"].env["USERS_DATABASE_URL"],
        "UPDATE account_tokens SET expires_at = created_at WHERE email = $1",
        email.lower(),
    )

    expired_verification = await gateway.post(
        "/api/email-verifications", json={"token": token_of(verification, VERIFY)}
    )
    expired_reset = await gateway.post(
        "/api/password-resets", json={"token": token_of(reset, RESET), "password": NEW_PASSWORD}
    )
    forged = await gateway.post(
        "/api/password-resets",
        json={"token": token_of(reset, RESET)[:-4] + "AAAA", "password": NEW_PASSWORD},
    )

    for refused in (expired_verification, expired_reset, forged):
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["code"] == "VALIDATION_FAILED"
    assert (await me(gateway, email, PASSWORD))["emailVerified"] is False


async def test_a_reset_request_for_an_unknown_address_is_answered_like_a_known_one(
    gateway: httpx.AsyncClient, mailbox: Mailbox
) -> None:
    known, unknown = new_email("known"), new_email("unknown")
    await sign_up(gateway, email=known, password=PASSWORD)

    answers = [
        await gateway.post("/api/password-reset-requests", json={"email": address})
        for address in (known, unknown)
    ]

    def shape(response: httpx.Response) -> tuple[int, bytes, list[str]]:
        varying = {"date", "x-request-id", "traceparent", "server-timing"}
        names = sorted(name for name in response.headers if name not in varying)
        return response.status_code, response.content, names

    assert shape(answers[0]) == shape(answers[1])
    await mailbox.wait_for(known, 2)  # the known address was mailed; the unknown was not
    await asyncio.sleep(0.5)
    assert await mailbox.messages_to(unknown) == []


async def test_a_message_written_while_the_mail_server_is_down_is_sent_once_it_is_back(
    gateway: httpx.AsyncClient, mailbox: Mailbox, stack: Stack
) -> None:
    catcher = stack.mail
    assert catcher is not None
    email = new_email("outage")
    catcher.stop()
    try:
        user = await sign_up(gateway, email=email, password=PASSWORD)  # acknowledged: 201
        await asyncio.sleep(1.0)  # the sender's tries meet a closed port
    finally:
        catcher.start()
        await catcher.until_ready()

    [message] = await mailbox.wait_for(email, timeout_s=60.0)
    verified = await gateway.post(
        "/api/email-verifications", json={"token": token_of(message, VERIFY)}
    )
    assert verified.status_code == 204
    assert user["emailVerified"] is False
    await asyncio.sleep(1.0)  # and only once
    assert len(await mailbox.messages_to(email)) == 1


async def test_a_reset_token_cannot_be_spent_on_another_account(
    gateway: httpx.AsyncClient, mailbox: Mailbox
) -> None:
    attacker, victim = new_email("attacker"), new_email("victim")
    for address in (attacker, victim):
        await sign_up(gateway, email=address, password=PASSWORD)
    await gateway.post("/api/password-reset-requests", json={"email": attacker})
    _, message = await mailbox.wait_for(attacker, 2)

    # The token is all the request carries: whichever account it is sent "for", it sets the
    # password of the account it was mailed to, and only once.
    spent = await gateway.post(
        "/api/password-resets",
        json={"token": token_of(message, RESET), "password": NEW_PASSWORD, "email": victim},
    )

    assert spent.status_code == 400  # no such field: the body names no account
    used = await gateway.post(
        "/api/password-resets", json={"token": token_of(message, RESET), "password": NEW_PASSWORD}
    )
    assert used.status_code == 204
    victim_login = await gateway.post(
        "/api/auth/token", json={"email": victim, "password": NEW_PASSWORD}
    )
    assert victim_login.status_code == 401
    assert (await log_in(gateway, victim))["accessToken"]
