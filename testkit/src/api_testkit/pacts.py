"""Consumer-driven contracts (Pact): where the pact files live, how a consumer test writes one
and how a provider suite verifies every pact naming it.

A consumer test runs the consumer's real client code against Pact's mock provider and writes
the pact to a temporary folder; ``written_pact`` then asserts that it equals the committed file
``contracts/pacts/<consumer>-<provider>.json``, so a consumer that changes what it asks or reads
cannot do so without the committed contract changing with it (``make pacts-update`` rewrites
the files: ``PACTS_UPDATE=1``). A provider suite verifies every committed pact whose provider it
is (``verify_pacts``): a provider change that breaks a consumer fails the provider's own suite.
See docs/contracts.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
from aiohttp import web
from pact import Pact, Verifier, generate
from pact.match.matcher import GenericMatcher

from .aiohttp_servers import serving
from .paths import REPO

PACTS = REPO / "contracts" / "pacts"
UPDATE_ENV = "PACTS_UPDATE"

# The names the pact files use for each side (a dispatcher consumes, its service does not).
ORDERS_SERVICE = "orders-service"
USERS_SERVICE = "users-service"
BOOKS_GRAPHQL = "books-graphql"
GATEWAY = "gateway"
WEBHOOKS_DISPATCHER = "webhooks-dispatcher"


def _untracked() -> None:
    # Pact's core reports usage over the network unless told not to; tests stay offline.
    os.environ.setdefault("PACT_DO_NOT_TRACK", "true")


def new_pact(consumer: str, provider: str) -> Pact:
    """An empty pact of the V4 specification (HTTP and message interactions alike)."""
    _untracked()
    return Pact(consumer, provider).with_specification("V4")


def pact_file(consumer: str, provider: str) -> Path:
    return PACTS / f"{consumer}-{provider}.json"


def written_pact(folder: Path, *pacts: Pact) -> dict[str, Any]:
    """Write ``pacts`` (one consumer and provider; one mock server each, when interactions
    would be ambiguous on one) into one file in ``folder`` and assert it equals the committed
    file (or, with ``PACTS_UPDATE=1``, replace the committed file with it); return it."""
    assert pacts, "no pact to write"
    names = {f"{pact.consumer}-{pact.provider}.json" for pact in pacts}
    assert len(names) == 1, f"one file at a time: {sorted(names)}"
    for index, pact in enumerate(pacts):
        pact.write_file(folder, overwrite=index == 0)
    name = names.pop()
    written = folder / name
    committed = PACTS / name
    if os.environ.get(UPDATE_ENV) == "1":
        PACTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(written, committed)
    document: dict[str, Any] = orjson.loads(written.read_bytes())
    assert committed.is_file(), f"{committed} is missing: run make pacts-update and commit it"
    assert document == orjson.loads(committed.read_bytes()), (
        f"The consumer's contract changed, {committed.relative_to(REPO)} did not: review the "
        "difference, run make pacts-update and commit the file with the change."
    )
    return document


def pacts_of(provider: str) -> list[Path]:
    """Every committed pact whose provider is ``provider``."""
    return sorted(PACTS.glob(f"*-{provider}.json"))


StateHandler = Callable[[dict[str, Any]], Awaitable[Mapping[str, str]]]
"""Sets up one provider state from its parameters, for real (a user signed up through the
provider's API, say); returns the values the pact's ``from_state`` expressions name."""


def from_state(expression: str, example: str) -> GenericMatcher[str]:
    """A value the consumer test sees as ``example`` and the provider verification builds
    from the provider state's values: ``from_state("/api/users/${userId}", "/api/users/1")``.
    For what only the provider can make: an id it chose, a token it issued."""
    return GenericMatcher("type", value=example, generator=generate.provider_state(expression))


async def verify_pacts(
    provider: str,
    *,
    url: str | None = None,
    states: Mapping[str, StateHandler] | None = None,
    messages: Mapping[str, bytes] | None = None,
) -> None:
    """Verify every committed pact of ``provider``: HTTP interactions replayed on ``url``
    after ``states`` set up theirs, message interactions compared with ``messages``
    (description → the bytes the real producer wrote). Fails the test, with Pact's report,
    when any interaction fails."""
    _untracked()
    sources = pacts_of(provider)
    assert sources, f"no pact in {PACTS} names {provider} as its provider"
    host = urlsplit(url).hostname if url is not None else None
    verifier = Verifier(provider, host).set_error_on_empty_pact(enabled=True)
    verifier.set_coloured_output(enabled=False)
    for source in sources:
        verifier.add_source(source)
    if url is not None:
        verifier.add_transport(url=url)
    if messages is not None:
        verifier.message_handler(
            {
                description: {
                    "contents": body,
                    "content_type": "application/json",
                    "metadata": None,
                }
                for description, body in messages.items()
            }
        )
    async with _state_changes(states or {}) as state_url:
        verifier.state_handler(state_url, teardown=False, body=True)
        # Pact's verifier blocks while it replays; the state changes it asks for are served on
        # this loop meanwhile.
        try:
            await asyncio.to_thread(verifier.verify)
        except Exception as error:
            raise AssertionError(f"{error}\n{verifier.output(strip_ansi=True)}") from None
    print(verifier.output(strip_ansi=True))  # the report, for make pacts (pytest -rP)


@contextlib.asynccontextmanager
async def _state_changes(states: Mapping[str, StateHandler]) -> AsyncIterator[str]:
    """Pact's state-change endpoint: ``{"state", "params", "action"}`` in, the state's values
    out (Pact's verifier feeds them to the ``from_state`` generators)."""

    async def change(request: web.Request) -> web.Response:
        body = await request.json()
        state = body.get("state") or ""
        if not state or body.get("action") != "setup":
            return web.json_response({})
        if state not in states:
            return web.json_response({"error": f"no such provider state: {state}"}, status=500)
        values = await states[state](body.get("params") or {})
        return web.json_response(dict(values))

    app = web.Application()
    app.router.add_post("/", change)
    async with serving(app) as url:
        yield f"{url}/"
