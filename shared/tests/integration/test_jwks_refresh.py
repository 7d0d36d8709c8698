"""A key withdrawn from the JWKS stops being trusted at the next timed refresh.

A real JWKS server (a Sanic app on a real socket) whose key set the test changes; the
verifier's clock is injected so that "five minutes later" needs no waiting.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sanic import Request, Sanic
from sanic.response import HTTPResponse, json

from api_shared.auth.keys import JwksKeySource
from api_shared.auth.verifier import TokenVerifier
from api_shared.errors import UnauthenticatedError
from api_shared.http import HttpSession
from api_testkit.in_process import serve_in_process
from api_testkit.tokens import TestSigner


class JwksServer:
    """Publishes the keys of ``signers``; counts the fetches."""

    def __init__(self, *signers: TestSigner) -> None:
        self.signers = list(signers)
        self.fetches = 0
        self.served: asyncio.Queue[set[str]] = asyncio.Queue()  # the kids of each answer
        self.url = ""

    def document(self) -> dict[str, Any]:
        keys: list[Any] = []
        for signer in self.signers:
            keys += signer.jwks()["keys"]
        return {"keys": keys}


class Clock:
    def __init__(self) -> None:
        self.now = time.monotonic()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def jwks(old: TestSigner, new: TestSigner) -> AsyncIterator[JwksServer]:
    server = JwksServer(old, new)
    Sanic.test_mode = True
    app = Sanic("jwks-server")

    @app.get("/.well-known/jwks.json")
    async def get_jwks(request: Request) -> HTTPResponse:
        server.fetches += 1
        document = server.document()
        server.served.put_nowait({key["kid"] for key in document["keys"]})
        return json(document)

    async with serve_in_process(app) as url:
        server.url = f"{url}/.well-known/jwks.json"
        yield server


@pytest.fixture
def old() -> TestSigner:
    return TestSigner()


@pytest.fixture
def new() -> TestSigner:
    return TestSigner()


async def test_a_withdrawn_key_is_refused_after_the_refresh_interval_even_for_cached_tokens(
    jwks: JwksServer, old: TestSigner, new: TestSigner, http_session: HttpSession
) -> None:
    clock = Clock()
    source = JwksKeySource(jwks.url, http_session, refresh_interval_s=300, clock=clock)
    verifier = TokenVerifier(source, issuer=old.issuer, audience=old.audience)
    old_token, new_token = old.token("user-1"), new.token("user-2")
    await verifier.verify(old_token)
    await verifier.verify(new_token)

    jwks.signers = [new]  # the old key is withdrawn
    clock.now += 299
    still_cached = await verifier.verify(old_token)  # within the interval: not yet known
    clock.now += 2

    with pytest.raises(UnauthenticatedError, match="known key"):
        await verifier.verify(old_token)
    assert (await verifier.verify(new_token)).subject == "user-2"
    assert still_cached.subject == "user-1"
    assert jwks.fetches == 2


async def test_cached_verdicts_of_a_withdrawn_key_are_dropped_at_the_next_refresh(
    jwks: JwksServer, old: TestSigner, new: TestSigner, http_session: HttpSession
) -> None:
    clock = Clock()
    source = JwksKeySource(jwks.url, http_session, refresh_interval_s=300, clock=clock)
    verifier = TokenVerifier(source, issuer=old.issuer, audience=old.audience)
    for n in range(5):
        await verifier.verify(old.token(f"user-{n}"))

    jwks.signers = [new]
    clock.now += 301
    await verifier.verify(new.token("user-9"))  # refreshes, then forgets the old key's tokens

    assert [principal.subject for principal, _, _ in verifier._cache.values()] == ["user-9"]


async def test_keep_fresh_fetches_the_jwks_on_its_timer_without_any_request(
    jwks: JwksServer, old: TestSigner, new: TestSigner, http_session: HttpSession
) -> None:
    # A clock that stands still: the keys never go stale by the clock, so what is trusted
    # depends on the fetches alone (which keep_fresh times with real sleeps).
    source = JwksKeySource(
        jwks.url, http_session, refresh_interval_s=0.2, min_refresh_s=0, clock=Clock()
    )
    task = asyncio.create_task(source.keep_fresh())
    try:
        # Once a fetch has started, the one before it has been applied.
        await asyncio.wait_for(jwks.served.get(), 10)
        await asyncio.wait_for(jwks.served.get(), 10)
        trusted_at_first = source.still_trusts(old.kid)
        jwks.signers = [new]
        while old.kid in await asyncio.wait_for(jwks.served.get(), 10):
            pass  # answered before the change
        await asyncio.wait_for(jwks.served.get(), 10)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    assert trusted_at_first
    assert not source.still_trusts(old.kid)
    assert source.still_trusts(new.kid)
    assert jwks.fetches >= 2


@pytest.mark.parametrize("interval", [0, -1, 301])
def test_the_refresh_interval_is_bounded_to_five_minutes(interval: float) -> None:
    http = HttpSession(timeout_s=1.0)
    with pytest.raises(ValueError, match="interval"):
        JwksKeySource("http://127.0.0.1:1/jwks.json", http, refresh_interval_s=interval)


async def test_while_the_jwks_cannot_be_fetched_known_keys_stay_trusted_and_requests_do_not_wait(
    jwks: JwksServer, old: TestSigner, http_session: HttpSession
) -> None:
    clock = Clock()
    source = JwksKeySource(jwks.url, http_session, refresh_interval_s=300, clock=clock)
    verifier = TokenVerifier(source, issuer=old.issuer, audience=old.audience)
    token = old.token("user-1")
    await verifier.verify(token)
    source.url = jwks.url.replace("/.well-known/jwks.json", "/gone")  # 404 from now on

    clock.now += 301
    first = await verifier.verify(token)  # the timed fetch fails: the key is kept
    fetches = jwks.fetches
    clock.now += 1
    second = await verifier.verify(token)  # within the retry pause: a cache hit, no fetch

    assert first.subject == second.subject == "user-1"
    assert jwks.fetches == fetches
    assert source.still_trusts(old.kid)
