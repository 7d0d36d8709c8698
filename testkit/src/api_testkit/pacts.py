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
from pact import Pact, Verifier, generate, match
from pact.match.matcher import GenericMatcher

from api_shared.events.models import OutboxEvent

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
# A service's events are a provider of their own: their pacts are verified against its outbox,
# not its HTTP API, and a consumer of both has one file for each.
USERS_SERVICE_EVENTS = "users-service-events"
ORDERS_SERVICE_EVENTS = "orders-service-events"


def _untracked() -> None:
    # Pact's core reports usage over the network unless told not to; tests stay offline.
    os.environ.setdefault("PACT_DO_NOT_TRACK", "true")


def new_pact(consumer: str, provider: str) -> Pact:
    """An empty pact of the V4 specification (HTTP and message interactions alike)."""
    _untracked()
    return Pact(consumer, provider).with_specification("V4")


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
    (description → the bytes the real producer wrote, the change that made them being the
    message's provider state). Fails the test, with Pact's report, when any interaction
    fails."""
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
    failures: list[str] = []
    async with _state_changes(states or {}, failures) as state_url:
        if states is not None:
            verifier.state_handler(state_url, teardown=False, body=True)
        # Pact's verifier blocks while it replays; the state changes it asks for are served on
        # this loop meanwhile.
        try:
            await asyncio.to_thread(verifier.verify)
        except Exception as error:
            raise AssertionError(
                f"{error}\n{verifier.output(strip_ansi=True)}\n{chr(10).join(failures)}"
            ) from None
    assert not failures, "\n".join(failures)
    print(verifier.output(strip_ansi=True))  # the report, for make pacts (pytest -rP)


@contextlib.asynccontextmanager
async def _state_changes(
    states: Mapping[str, StateHandler], failures: list[str]
) -> AsyncIterator[str]:
    """Pact's state-change endpoint: ``{"state", "params", "action"}`` in, the state's values
    out (Pact's verifier feeds them to the ``from_state`` generators).

    A state that fails is recorded in ``failures`` and answered 200 all the same: Pact's
    verifier retries a failed state change for minutes; the interaction fails without it.
    """

    async def change(request: web.Request) -> web.Response:
        body = await request.json()
        state = body.get("state") or ""
        if not state or body.get("action") != "setup":
            return web.json_response({})
        if state not in states:
            failures.append(f"no handler for the provider state {state!r}")
            return web.json_response({})
        try:
            values = await states[state](body.get("params") or {})
        except Exception as error:
            failures.append(f"the provider state {state!r} failed: {error!r}")
            return web.json_response({})
        return web.json_response(dict(values))

    app = web.Application()
    app.router.add_post("/", change)
    async with serving(app) as url:
        yield f"{url}/"


ISO_TIME = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$"


def cloud_event(
    source: str, event_type: str, subject: str, data: Mapping[str, object]
) -> dict[str, object]:
    """The CloudEvents envelope every event travels in (``api_shared.events.envelope``), as a
    consumer expects it: its own ``source``, ``type`` and ``data``, the rest by shape."""
    return {
        "specversion": "1.0",
        "id": match.uuid("5a3c1d2e-8f4b-4c6a-9e7d-1b2c3d4e5f60"),
        "source": source,
        "type": event_type,
        "subject": match.uuid(subject),
        "time": match.regex("2026-01-02T03:04:05.678901Z", regex=ISO_TIME),
        "datacontenttype": "application/json",
        "data": dict(data),
        "sequence": match.int(1, min=1),
    }


def message_body(body: str | bytes | None) -> bytes:
    """A message's body as its consumer receives it from NATS: bytes."""
    assert body is not None, "the message has no body"
    return body.encode() if isinstance(body, str) else body


async def recorded_event(event_type: str, subject: str) -> bytes:
    """The latest event of that type and subject in the outbox (of the ORM context open), byte
    for byte as the relay publishes it."""
    row = await OutboxEvent.filter(type=event_type, subject=subject).order_by("-sequence").first()
    assert row is not None, f"the outbox holds no {event_type} of {subject}"
    return row.document.encode()
