"""The mail catcher's store and page, mails read from the bytes the platform's sender puts on
the wire, and ``list`` without a catcher (no server; shared/tests/integration/test_mail_sender.py
sends to a running one)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from api_devservers.mail_catcher import MailStore, index_page, main, read_mail
from api_shared.mail.message import Mail
from api_shared.mail.smtp import build_message
from api_testkit.ports import free_port


def test_the_store_keeps_the_newest_mails_and_drops_the_oldest() -> None:
    store = MailStore(capacity=3)
    for n in range(5):
        mail = build_message(
            Mail(to=f"u{n}@example.com", subject=f"mail {n}", text="t", html="h"),
            sender="a@b.example",
            message_id=f"<{n}@b>",
            date=datetime.now(UTC),
        )
        store.add(read_mail(mail.as_bytes()))

    assert store.total == 3
    assert [mail.subject for mail in store.page(0, 10)] == ["mail 4", "mail 3", "mail 2"]
    assert [mail.subject for mail in store.page(1, 1)] == ["mail 3"]


def test_the_page_lists_links_and_escapes_what_a_mail_says() -> None:
    evil = Mail(
        to="ada@example.com",
        subject="<script>alert(1)</script>",
        text='See https://app.example/a?b=1&c="2" and https://app.example/next.',
        html="<p>x</p>",
    )
    message = build_message(evil, sender="a@b.example", message_id="<e@b>", date=datetime.now(UTC))

    page = index_page([read_mail(message.as_bytes())], total=1)

    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert '<a href="https://app.example/a?b=1&amp;c=">' in page
    assert '<a href="https://app.example/next">' in page


def test_list_without_a_catcher_says_where_it_looked_and_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("MAIL_CATCHER_URL", url)

    assert main(["list"]) == 1
    assert f"error: no mail catcher at {url}" in capsys.readouterr().err
