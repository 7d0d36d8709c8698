"""``python -m api_devservers.mail_catcher [serve]`` runs the catcher until SIGINT or SIGTERM;
``... list`` prints the last mails and their links, read from a running catcher's API."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
import urllib.request
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import orjson

from api_devservers.mail_catcher.server import MailCatcher
from api_devservers.mail_catcher.settings import CatcherSettings
from api_devservers.mail_catcher.smtp import AIOSMTPD_LOGGER, SERVICE
from api_devservers.mail_catcher.store import LINK
from api_shared.logging import configure_logging

LIST_TIMEOUT_S = 5.0


async def serve(settings: CatcherSettings) -> None:
    """Run the catcher until SIGINT or SIGTERM."""
    AIOSMTPD_LOGGER.setLevel(logging.WARNING)  # not its line per SMTP command
    catcher = MailCatcher.from_settings(settings)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stopping.set)
    await catcher.start()
    try:
        await stopping.wait()
    finally:
        await catcher.stop()


def fetch_json(url: str) -> Any:
    """GET ``url`` (http or https only) and read its JSON."""
    if urlsplit(url).scheme not in ("http", "https"):
        raise ValueError("MAIL_CATCHER_URL must be an http:// or https:// URL")
    with urllib.request.urlopen(url, timeout=LIST_TIMEOUT_S) as response:  # noqa: S310 (scheme checked)
        return orjson.loads(response.read())


def list_mail(base_url: str, limit: int) -> list[str]:
    """The last ``limit`` mails as lines: time, recipients, subject, then each link."""
    base = base_url.rstrip("/")
    listing = fetch_json(f"{base}/api/v1/messages?limit={limit}")
    lines: list[str] = []
    for summary in listing["messages"]:
        detail = fetch_json(f"{base}/api/v1/message/{summary['ID']}")
        recipients = ", ".join(to["Address"] for to in summary["To"])
        lines.append(f"{summary['Created']}  {recipients}  {summary['Subject']}")
        text = str(detail.get("Text", ""))
        lines.extend(f"    {link}" for link in dict.fromkeys(LINK.findall(text)))
    if not lines:
        lines.append("No mail yet.")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m api_devservers.mail_catcher",
        description="A development mail catcher (SMTP in, Mailpit's HTTP API out).",
    )
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("serve", help="run the SMTP and HTTP servers (the default)")
    lister = commands.add_parser("list", help="print the last mails and their links")
    lister.add_argument("--limit", type=int, default=10)
    args = parser.parse_args(argv)
    settings = CatcherSettings()
    if args.command == "list":
        try:
            lines = list_mail(settings.url, max(1, args.limit))
        except OSError as error:
            print(f"error: no mail catcher at {settings.url} ({error})", file=sys.stderr)
            return 1
        print("\n".join(lines))
        return 0
    configure_logging(SERVICE, settings.log_level)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(settings))
    return 0
