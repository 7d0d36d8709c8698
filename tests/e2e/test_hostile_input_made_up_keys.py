"""Made-up API keys through the gateway (docs/api.md#api-keys): a well-formed key that no one
holds costs users-service one question per ``STANDING_CACHE_S``, however often it is sent,
since the gateway keeps a refusal as long as a confirmation. Before, each repetition was a
question: a flood of one made-up key was a flood at users-service too.

What reached users-service is counted on its own /metrics (``GET /api/api-keys/current``
answered 401).
"""

from __future__ import annotations

import secrets

import httpx
import pytest

from api_testkit.contract import assert_refused
from api_testkit.stack import Stack

pytestmark = [
    pytest.mark.processes,  # reads users-service's own /metrics
    pytest.mark.usefixtures("every_service_survives"),
    pytest.mark.needs(gateway="2.0.0"),
]

KEY_QUESTION = 'route="/api/api-keys/current"'
SENT = 10


def made_up_key() -> str:
    """A key of the right shape (``ak_live_`` and 43 base64url characters) no one holds."""
    return "ak_live_" + secrets.token_urlsafe(32)


async def refused_key_questions(stack: Stack) -> int:
    """How many key questions users-service has answered 401 since it started."""
    async with httpx.AsyncClient() as client:
        metrics = (await client.get(f"{stack.services['users'].url}/metrics")).text
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in metrics.splitlines()
        if line.startswith("http_requests_total{")
        and KEY_QUESTION in line
        and 'status="401"' in line
    )


async def send(gateway: httpx.AsyncClient, key: str, times: int) -> None:
    for _ in range(times):
        refused = await gateway.get("/orders", headers={"Authorization": f"Bearer {key}"})
        assert_refused(refused, 401, "UNAUTHENTICATED")


async def test_one_made_up_key_sent_again_and_again_is_one_question_to_users_service(
    gateway: httpx.AsyncClient, stack: Stack
) -> None:
    before = await refused_key_questions(stack)

    await send(gateway, made_up_key(), SENT)
    once = await refused_key_questions(stack)
    await send(gateway, made_up_key(), SENT)  # another key is another question
    twice = await refused_key_questions(stack)

    assert (once - before, twice - once) == (1, 1)
