"""Mail's plain parts: SMTP_URL, the settings' refusals, the message on the wire and the retry
delays (no server, no database)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path

import pytest
from pydantic import ValidationError

from api_devservers.mail_catcher import read_mail
from api_shared.mail.message import Mail
from api_shared.mail.sender import describe, retry_delay
from api_shared.mail.settings import MailSettings, SmtpUrl
from api_shared.mail.smtp import build_message

MAIL = Mail(
    to="ada@example.com",
    subject="Confirm your address",
    text="Open https://app.example/verify?token=abc to confirm.",
    html="<p>Open <a href='https://app.example/verify?token=abc'>this link</a>.</p>",
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("smtp://mail.example", SmtpUrl("mail.example", 25, "none")),
        ("smtp://127.0.0.1:1025", SmtpUrl("127.0.0.1", 1025, "none")),
        ("smtp://mail.example?starttls=true", SmtpUrl("mail.example", 587, "starttls")),
        ("smtp://mail.example:2525?starttls=true", SmtpUrl("mail.example", 2525, "starttls")),
        ("smtp://mail.example?starttls=false", SmtpUrl("mail.example", 25, "none")),
        ("smtps://mail.example", SmtpUrl("mail.example", 465, "tls")),
        ("smtps://mail.example:4650/", SmtpUrl("mail.example", 4650, "tls")),
        (
            "smtp://apikey%40corp@mail.example:587?starttls=true",
            SmtpUrl("mail.example", 587, "starttls", username="apikey@corp"),
        ),
    ],
)
def test_smtp_urls_are_read_with_their_tls_mode_and_its_default_port(
    url: str, expected: SmtpUrl
) -> None:
    assert SmtpUrl.parse(url) == expected


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://mail.example", "smtp:// or smtps://"),
        ("mail.example:25", "smtp:// or smtps://"),
        ("smtp://", "no host"),
        ("smtp://:25", "no host"),
        ("smtp://mail.example:99999", "port"),
        ("smtp://mail.example:0", "port"),
        ("smtp://mail.example:abc", "port"),
        ("smtp://mail.example/inbox", "path"),
        ("smtps://mail.example?starttls=true", "TLS already"),
        ("smtp://mail.example?starttls=maybe", "true or false"),
        ("smtp://mail.example?tls=true", "unknown option"),
    ],
)
def test_smtp_urls_of_another_form_are_refused_with_a_reason(url: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        SmtpUrl.parse(url)


def test_a_password_in_the_url_is_kept_out_of_repr_and_errors() -> None:
    smtp = SmtpUrl.parse("smtp://user:s3cret@mail.example")

    assert smtp.password == "s3cret"
    assert "s3cret" not in repr(smtp)
    with pytest.raises(ValueError, match="port") as refused:
        SmtpUrl.parse("smtp://user:s3cret@mail.example:99999")
    assert "s3cret" not in str(refused.value)


def test_a_password_in_smtp_url_is_refused_in_production_and_allowed_in_development() -> None:
    url = "smtp://user:s3cret@mail.example:587?starttls=true"

    with pytest.raises(ValidationError, match="SMTP_PASSWORD_FILE") as refused:
        MailSettings(smtp_url=url, environment="production")
    development = MailSettings(smtp_url=url)

    assert "s3cret" not in str(refused.value)
    assert development.smtp_password() == "s3cret"


def test_the_password_file_is_read_at_each_call_without_its_line_end(tmp_path: Path) -> None:
    secret = tmp_path / "smtp-password"
    secret.write_text("first\n")
    settings = MailSettings(
        smtp_url="smtp://user@mail.example:587?starttls=true",
        smtp_password_file=secret,
        environment="production",
    )

    first = settings.smtp_password()
    secret.write_text("rotated\n")

    assert (first, settings.smtp_password()) == ("first", "rotated")


def test_mail_settings_read_their_variables_and_an_empty_smtp_url_means_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SMTP_URL", "")
    monkeypatch.setenv("MAIL_FROM", "Shop <hello@shop.example>")
    monkeypatch.setenv("MAIL_SEND_INTERVAL_S", "2")
    monkeypatch.setenv("MAIL_MAX_ATTEMPTS", "5")

    settings = MailSettings()

    assert settings.smtp is None
    assert settings.mail_domain == "shop.example"
    assert (settings.mail_send_interval_s, settings.mail_max_attempts) == (2.0, 5)
    assert MailSettings(mail_from="no-reply@localhost").mail_domain == "localhost"


@pytest.mark.parametrize("mail_from", ["no address", "Shop <shop>", "a@b\r\nBcc: x@y"])
def test_a_mail_from_without_an_address_and_domain_is_refused(mail_from: str) -> None:
    with pytest.raises(ValidationError):
        MailSettings(mail_from=mail_from)


@pytest.mark.parametrize(
    "to", ["", "ada", "Ada <ada@example.com>", "a@example.com, b@example.com", "a@x\r\nBcc: b@y"]
)
def test_a_mail_goes_to_one_bare_address(to: str) -> None:
    with pytest.raises(ValueError, match="one address"):
        Mail(to=to, subject="s", text="t", html="h")


def test_a_subject_of_several_lines_is_refused_as_a_header_injection() -> None:
    with pytest.raises(ValueError, match="one line"):
        Mail(to="ada@example.com", subject="Hi\r\nBcc: eve@example.com", text="t", html="h")


def test_the_message_has_its_headers_and_a_text_then_html_alternative() -> None:
    sent_at = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    message = build_message(
        MAIL, sender="Shop <no-reply@shop.example>", message_id="<m-1@shop.example>", date=sent_at
    )

    # Read back from its bytes, as the receiver does.
    received = message_from_bytes(message.as_bytes(), policy=policy.default)
    assert isinstance(received, EmailMessage)
    assert received["From"] == "Shop <no-reply@shop.example>"
    assert received["To"] == "ada@example.com"
    assert received["Subject"] == "Confirm your address"
    assert received["Message-ID"] == "<m-1@shop.example>"
    assert received["Date"].datetime == sent_at
    assert received.get_content_type() == "multipart/alternative"
    parts = [part.get_content_type() for part in received.iter_parts()]
    assert parts == ["text/plain", "text/html"]
    text, html = (received.get_body(preferencelist=(kind,)) for kind in ("plain", "html"))
    assert text is not None
    assert html is not None
    assert text.get_content().strip() == MAIL.text
    assert html.get_content().strip() == MAIL.html


def test_a_subject_beyond_ascii_is_encoded_and_reads_back_the_same() -> None:
    mail = Mail(to="zoe@example.com", subject="Bienvenue, Zoë — ça marche", text="é", html="é")
    message = build_message(mail, sender="a@b.example", message_id="<x@b>", date=datetime.now(UTC))

    raw = message.as_bytes()
    assert b"Zo\xc3\xab" not in raw.split(b"\n\n", 1)[0]  # the header is encoded, not raw UTF-8
    assert read_mail(raw).subject == mail.subject


def test_retry_delays_double_with_jitter_up_to_their_cap() -> None:
    rng = random.Random(7)  # noqa: S311 (jitter, not security)
    delays = [retry_delay(n, initial_s=5, maximum_s=600, rng=rng) for n in range(1, 13)]

    for attempts, delay in enumerate(delays, start=1):
        ceiling = min(600, 5 * 2 ** (attempts - 1))
        assert ceiling / 2 <= delay <= ceiling
    assert all(300 <= delay <= 600 for delay in delays[8:])  # capped from the 9th on
    assert retry_delay(10_000, initial_s=5, maximum_s=600) <= 600  # no overflow


def test_a_failure_is_described_on_one_bounded_line() -> None:
    reason = describe(ConnectionRefusedError("line one\nline two " + "x" * 1000))

    assert reason.startswith("ConnectionRefusedError: line one line two")
    assert len(reason) == 500
