"""The platform's mail as a phisher's tool (issue #39, item 3), through the gateway to the
stack's real mail catcher: anyone may sign up with anyone's address, so a name was a
stranger's words, lines and links in a message the platform sent to that address.

The name is refused when it holds control, line-separator or bidi characters
(docs/api.md#users), and no message carries a name at all, not even a legal one
(docs/api.md#email-verification-and-password-reset): the only link in it is the platform's.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from api_testkit.actors import PASSWORD, new_email, sign_up
from api_testkit.mailbox import LINK, Mailbox
from api_testkit.stack import Stack

pytestmark = [pytest.mark.processes, pytest.mark.usefixtures("every_service_survives")]

VERIFY, RESET = "/verify-email", "/reset-password"
HOSTILE_NAMES = {
    "new lines and a link": "Ada\n\nYour account will be closed. Keep it: https://evil.example",
    "a line separator": "Ada\u2028Keep your account: https://evil.example",
    "a right-to-left override": "Ada \u202elpmaxe.live//:sptth",
}
# No character the rule refuses: accepted as a name, and still never mailed.
LEGAL_BUT_HOSTILE = "Security team - confirm at https://evil.example/confirm"
TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")


@pytest.fixture
def mailbox(stack: Stack) -> Mailbox:
    return Mailbox(stack.mail_url)


def assert_only_the_platforms_words(message: dict[str, Any], path: str) -> None:
    """No name, nothing of the requester's, and one link: the front end's, to ``path``."""
    for part in (message["Subject"], message["Text"], message["HTML"]):
        for requester_text in ("evil", "Ada", "Security team"):
            assert requester_text not in part
    assert message["Text"].startswith("Hello,")
    links = {link.rstrip(".,") for link in LINK.findall(message["Text"] + message["HTML"])}
    assert len(links) == 1, links
    parts = urlsplit(links.pop())
    assert parts.path == path
    assert TOKEN.fullmatch(parts.query.removeprefix("token="))


@pytest.mark.parametrize("name", HOSTILE_NAMES.values(), ids=HOSTILE_NAMES.keys())
async def test_a_sign_up_whose_name_holds_lines_or_bidi_is_refused_and_changes_nothing(
    gateway: httpx.AsyncClient, mailbox: Mailbox, name: str
) -> None:
    email = new_email("phish")

    refused = await gateway.post(
        "/api/users", json={"name": name, "email": email, "password": PASSWORD}
    )

    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["code"] == "VALIDATION_FAILED"
    assert list(error["fields"]) == ["name"]
    # Nothing was made of it: the address is free, and its only message is the next sign-up's.
    await sign_up(gateway, name="Ada", email=email, password=PASSWORD)
    [message] = await mailbox.wait_for(email)
    assert_only_the_platforms_words(message, VERIFY)


async def test_a_squatters_chosen_name_never_reaches_the_owner_of_the_address(
    gateway: httpx.AsyncClient, mailbox: Mailbox
) -> None:
    victim = new_email("victim")

    await sign_up(gateway, name=LEGAL_BUT_HOSTILE, email=victim, password=PASSWORD)
    asked = await gateway.post("/api/password-reset-requests", json={"email": victim})

    assert asked.status_code == 202
    verification, reset = await mailbox.wait_for(victim, 2)
    assert verification["Subject"] == "Confirm your email address"
    assert_only_the_platforms_words(verification, VERIFY)
    assert reset["Subject"] == "Reset your password"
    assert_only_the_platforms_words(reset, RESET)
