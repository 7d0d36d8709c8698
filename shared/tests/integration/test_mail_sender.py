"""The mail outbox, its sender and the catcher: real SMTP over loopback sockets, a real
database (PostgreSQL when TEST_DATABASE_URL names one), mail read back through the catcher's
Mailpit-shaped HTTP API."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from tortoise import connections

from api_devservers.mail_catcher import MailCatcher, list_mail
from api_shared.mail.message import Mail
from api_shared.mail.models import OutboxMail
from api_shared.mail.outbox import MailOutbox, OutsideTransactionError
from api_shared.mail.sender import MailSender
from api_shared.mail.settings import MailSettings
from api_shared.metrics import Readings
from api_shared.transactions import in_transaction
from api_testkit.databases import orm_on_temporary_database
from api_testkit.events import eventually
from api_testkit.ports import free_port

outbox = MailOutbox(domain="shop.example")


@pytest.fixture(scope="module")
async def database() -> AsyncIterator[None]:
    async with orm_on_temporary_database("mail", ["api_shared.mail.models"]):
        yield


@pytest.fixture
async def empty_outbox(database: None) -> None:
    await OutboxMail.all().delete()


@pytest.fixture
def catcher() -> MailCatcher:
    """A catcher on free ports, not started: a test starts it (or plays the server down)."""
    return MailCatcher(smtp_port=free_port(), http_port=free_port(), capacity=50)


@pytest.fixture
async def running_catcher(catcher: MailCatcher) -> AsyncIterator[MailCatcher]:
    await catcher.start()
    try:
        yield catcher
    finally:
        await catcher.stop()


def settings_for(catcher: MailCatcher, **overrides: Any) -> MailSettings:
    values: dict[str, Any] = {
        "smtp_url": catcher.smtp_url,
        "mail_from": "Shop <no-reply@shop.example>",
        "mail_send_interval_s": 0.05,
        **overrides,
    }
    return MailSettings(**values)


def quick_sender(settings: MailSettings, **options: Any) -> MailSender:
    """A sender whose retries come back within a tenth of a second."""
    return MailSender(settings, retry_initial_s=0.05, retry_max_s=0.1, **options)


def mail_to(n: int, **changes: str) -> Mail:
    values = {
        "to": f"user{n}@example.com",
        "subject": f"Welcome, user {n}",
        "text": f"Confirm: https://shop.example/verify?token=t{n}",
        "html": f"<p><a href='https://shop.example/verify?token=t{n}'>Confirm</a></p>",
        **changes,
    }
    return Mail(**values)


async def record(*mails: Mail) -> list[str]:
    """Each mail in a transaction of its own, as each request records its own; their ids."""
    ids = []
    for mail in mails:
        async with in_transaction():
            ids.append(await outbox.record(mail))
    return ids


async def api(catcher: MailCatcher, method: str, path: str) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, catcher.http_url + path) as response,
    ):
        body = await response.json() if response.content_type == "application/json" else None
        return response.status, body


async def caught(catcher: MailCatcher) -> list[dict[str, Any]]:
    """Every message the catcher holds, newest first, as its API lists them."""
    status, listing = await api(catcher, "GET", "/api/v1/messages?limit=1000")
    assert status == 200
    messages: list[dict[str, Any]] = listing["messages"]
    return messages


async def all_sent() -> bool:
    return not await OutboxMail.filter(sent_at=None).exists()


async def send_until_done(*senders: MailSender) -> None:
    """Run rounds of ``senders`` side by side until nothing is due."""
    async with asyncio.timeout(30):
        while not await all_sent():
            await asyncio.gather(*(sender.run_once() for sender in senders))


async def test_a_mail_recorded_outside_a_transaction_is_refused(empty_outbox: None) -> None:
    with pytest.raises(OutsideTransactionError):
        await outbox.record(mail_to(1))

    assert await OutboxMail.all().count() == 0


async def test_a_mail_whose_change_rolled_back_is_gone_with_it(empty_outbox: None) -> None:
    async def sign_up_that_fails() -> None:
        async with in_transaction():
            await outbox.record(mail_to(1))
            raise RuntimeError("the sign-up failed")

    with pytest.raises(RuntimeError):
        await sign_up_that_fails()

    assert await OutboxMail.all().count() == 0


async def test_the_sender_delivers_a_recorded_mail_once_with_its_message_id(
    empty_outbox: None, running_catcher: MailCatcher, tmp_path: Path
) -> None:
    # A login, its password from a file (the catcher accepts any).
    secret = tmp_path / "smtp-password"
    secret.write_text("dev-password\n")
    user_url = running_catcher.smtp_url.replace("smtp://", "smtp://mailer@")
    settings = settings_for(running_catcher, smtp_url=user_url, smtp_password_file=secret)
    [message_id] = await record(mail_to(1))
    sender = quick_sender(settings)

    assert await sender.run_once() == 1
    assert await sender.run_once() == 0  # nothing due any more

    [summary] = await caught(running_catcher)
    assert message_id == f"<{summary['MessageID']}>"
    assert message_id.endswith("@shop.example>")
    assert summary["From"] == {"Name": "Shop", "Address": "no-reply@shop.example"}
    assert summary["To"] == [{"Name": "", "Address": "user1@example.com"}]
    assert summary["Subject"] == "Welcome, user 1"
    assert summary["Read"] is False
    assert summary["Snippet"] == "Confirm: https://shop.example/verify?token=t1"
    assert datetime.fromisoformat(summary["Created"]) <= datetime.now(UTC)
    status, detail = await api(running_catcher, "GET", f"/api/v1/message/{summary['ID']}")
    assert status == 200
    assert detail["Text"].strip() == "Confirm: https://shop.example/verify?token=t1"
    assert "href='https://shop.example/verify?token=t1'" in detail["HTML"]
    assert detail["MessageID"] == summary["MessageID"]
    assert detail["Date"]
    row = await OutboxMail.get(message_id=message_id)
    assert row.sent_at is not None
    assert row.attempts == 0
    assert row.last_error is None
    assert sender.stats.sent == 1
    assert sender.healthy
    _, listing = await api(running_catcher, "GET", "/api/v1/messages")
    assert listing["unread"] == 0  # opening it read it, as in Mailpit


async def test_mail_waits_while_the_server_is_down_and_goes_once_when_it_is_back(
    empty_outbox: None, catcher: MailCatcher
) -> None:
    sender = quick_sender(settings_for(catcher))  # the catcher is not started: nothing listens
    await record(mail_to(1), mail_to(2), mail_to(3))

    assert await sender.run_once() == 0

    rows = await OutboxMail.all().order_by("id")
    assert [row.attempts for row in rows] == [1, 1, 1]
    assert all(row.sent_at is None and row.last_error for row in rows)
    assert all(row.next_attempt_at > row.created_at for row in rows)
    assert not sender.healthy
    assert sender.stats.failures == 3
    assert await sender.run_once() == 0  # not due yet: no attempt counted
    assert [row.attempts for row in await OutboxMail.all()] == [1, 1, 1]

    await sender.start()
    try:

        async def retried() -> bool:
            return await OutboxMail.filter(attempts__gte=2).count() == 3

        await eventually(retried, "the waiting mail to be tried again")
        readings = {m.name: m.samples[0].value for m in Readings_of(sender)}
        assert readings["mail_oldest_unsent_age_seconds"] > 0
        assert readings["mail_smtp_up"] == 0
        await catcher.start()
        await eventually(all_sent, "the waiting mail to go once the server is back")
        # Down again mid-way, one more mail recorded meanwhile: it waits, then goes too.
        await catcher.stop_smtp()
        await record(mail_to(4))
        await eventually(
            lambda: OutboxMail.filter(attempts__gte=1, sent_at=None).exists(),
            "the new mail to fail while the server is down",
        )
        await catcher.start_smtp()
        await eventually(all_sent, "the fourth mail to go")
    finally:
        await sender.stop()
        await catcher.stop()

    messages = await caught_after_stop(catcher)
    assert sorted(m["To"][0]["Address"] for m in messages) == [
        f"user{n}@example.com" for n in (1, 2, 3, 4)
    ]
    assert sender.stats.sent == 4
    assert sender.healthy


async def caught_after_stop(catcher: MailCatcher) -> list[dict[str, Any]]:
    """The stopped catcher's store, as its API would list it."""
    return [mail.summary() for mail in catcher.store.newest_first()]


def Readings_of(sender: MailSender) -> list[Any]:  # noqa: N802 (reads as the type it returns)
    [collector] = sender.collectors()
    assert isinstance(collector, Readings)
    return list(collector.collect())


async def test_a_mail_the_server_refuses_for_good_is_given_up_and_the_next_still_goes(
    empty_outbox: None, tmp_path: Path
) -> None:
    small = MailCatcher(smtp_port=free_port(), http_port=free_port(), max_message_bytes=4000)
    await small.start()
    try:
        settings = settings_for(small)
        sender = quick_sender(settings)
        await record(mail_to(1, text="x" * 8000), mail_to(2))

        assert await sender.run_once() == 1
        assert await sender.run_once() == 0
    finally:
        await small.stop()

    too_big, fine = await OutboxMail.all().order_by("id")
    assert too_big.sent_at is None
    assert too_big.attempts == settings.mail_max_attempts  # given up at the first answer
    assert too_big.last_error is not None
    assert "552" in too_big.last_error
    assert fine.sent_at is not None
    assert sender.stats.given_up == 1
    assert [m.subject for m in small.store.newest_first()] == ["Welcome, user 2"]


async def test_a_mail_is_given_up_after_its_last_attempt(
    empty_outbox: None, catcher: MailCatcher
) -> None:
    sender = quick_sender(settings_for(catcher, mail_max_attempts=2))  # nothing listens
    await record(mail_to(1))

    for _ in range(3):
        await OutboxMail.all().update(next_attempt_at=datetime.now(UTC))  # due now
        await sender.run_once()

    row = await OutboxMail.get()
    assert (row.attempts, row.sent_at) == (2, None)
    assert sender.stats.failures == 2
    assert sender.stats.given_up == 1


async def test_two_senders_on_postgresql_send_each_mail_once(
    empty_outbox: None, running_catcher: MailCatcher
) -> None:
    if connections.get("default").capabilities.dialect != "postgres":
        pytest.skip("replicas share PostgreSQL; SQLite is one process with one sender")
    await record(*(mail_to(n) for n in range(40)))
    settings = settings_for(running_catcher)
    senders = [quick_sender(settings, batch_size=5), quick_sender(settings, batch_size=5)]

    await send_until_done(*senders)

    messages = await caught(running_catcher)
    assert len(messages) == len({m["MessageID"] for m in messages}) == 40
    assert sum(sender.stats.sent for sender in senders) == 40
    assert all(sender.stats.sent > 0 for sender in senders)  # side by side, not one waiting


async def test_a_woken_sender_sends_without_waiting_for_its_pause(
    empty_outbox: None, running_catcher: MailCatcher
) -> None:
    sender = quick_sender(settings_for(running_catcher, mail_send_interval_s=60))
    await sender.start()
    try:
        await asyncio.sleep(0.1)  # its first round done, it pauses for a minute
        await record(mail_to(1))
        sender.wake()
        started = time.monotonic()
        await eventually(all_sent, "the woken sender to send")
        assert time.monotonic() - started < 5
    finally:
        await sender.stop()

    assert len(await caught(running_catcher)) == 1


async def test_without_smtp_url_mail_waits_and_the_lag_says_so(
    empty_outbox: None, caplog: pytest.LogCaptureFixture
) -> None:
    sender = MailSender(MailSettings(mail_send_interval_s=0.05))
    await record(mail_to(1))

    await sender.start()
    try:

        async def lag_measured() -> bool:
            return sender.stats.oldest_unsent_age_s > 0

        await eventually(lag_measured, "the lag of the waiting mail")
    finally:
        await sender.stop()

    assert await sender.run_once() == 0
    assert not await all_sent()
    assert "SMTP_URL is not set" in caplog.text


async def test_mail_sent_long_ago_is_purged_and_the_rest_is_kept(
    empty_outbox: None, running_catcher: MailCatcher
) -> None:
    await record(mail_to(1), mail_to(2), mail_to(3))
    sender = quick_sender(settings_for(running_catcher))
    await sender.run_once()
    first, second, third = await OutboxMail.all().order_by("id")
    long_ago = datetime.now(UTC) - timedelta(days=8)
    await OutboxMail.filter(id=first.id).update(sent_at=long_ago)
    await OutboxMail.filter(id=third.id).update(sent_at=None)

    assert await sender.purge_sent() == 1
    assert sorted(await OutboxMail.all().values_list("id", flat=True)) == [second.id, third.id]


async def test_the_catcher_keeps_its_last_mails_and_answers_as_mailpit_does(
    empty_outbox: None,
) -> None:
    catcher = MailCatcher(smtp_port=free_port(), http_port=free_port(), capacity=2)
    await catcher.start()
    try:
        await record(mail_to(1), mail_to(2), mail_to(3))
        await quick_sender(settings_for(catcher)).run_once()

        status, listing = await api(catcher, "GET", "/api/v1/messages?limit=1&start=1")
        assert status == 200
        assert (listing["total"], listing["unread"], listing["count"]) == (2, 2, 1)
        assert [m["Subject"] for m in listing["messages"]] == ["Welcome, user 2"]
        assert [m["Subject"] for m in await caught(catcher)] == [
            "Welcome, user 3",
            "Welcome, user 2",
        ]
        lines = await asyncio.to_thread(list_mail, catcher.http_url, 10)
        assert lines[0].endswith("user3@example.com  Welcome, user 3")
        assert lines[1] == "    https://shop.example/verify?token=t3"
        assert (await api(catcher, "GET", "/api/v1/message/unknown"))[0] == 404
        assert (await api(catcher, "GET", "/api/v1/messages?limit=x"))[0] == 400
        assert (await api(catcher, "GET", "/livez"))[0] == 200
        assert (await api(catcher, "DELETE", "/api/v1/messages"))[0] == 200
        assert await caught(catcher) == []
    finally:
        await catcher.stop()
