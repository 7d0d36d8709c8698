"""Steady traffic through the gateway while a fault is injected, and what each request got.

Every answer is judged as it arrives:

- ``OK``: what a healthy platform answers (200 for a read, 201 for a creation, a GraphQL
  answer without errors);
- ``REFUSED``: what an outage may cost, in the contract's shape: 503 UNAVAILABLE with
  ``Retry-After``, or 504 UPSTREAM_TIMEOUT;
- ``BROKEN``: anything else: a 500 or 502, another status, a body out of shape, no
  ``X-Request-ID``, no answer at all, or none within the gateway's timeout (plus slack).

The traffic is bounded: a fixed rate, a cap on requests in flight and on their total count;
it stops when the scenario says so and waits for what is still in flight.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

# What each kind of request needs besides the gateway itself. A creation is a write, which
# orders-service confirms with users-service (api_shared.standing): it needs users too, once
# the answer it keeps (STANDING_CACHE_S) has run out.
NEEDS: dict[str, frozenset[str]] = {
    "gateway.health": frozenset(),
    "users.read": frozenset({"users", "postgres"}),
    "orders.read": frozenset({"orders", "postgres"}),
    "books.read": frozenset({"books", "postgres"}),
    "orders.create": frozenset({"orders", "books", "users", "postgres"}),
    "orders.create-keyed": frozenset({"orders", "books", "users", "postgres"}),
}
ACTIONS = tuple(NEEDS)
BOOKS_QUERY = {"query": "{ books { id title } }"}
REFUSAL_CODES = {503: "UNAVAILABLE", 504: "UPSTREAM_TIMEOUT"}


class Verdict(enum.Enum):
    OK = "ok"
    REFUSED = "refused"
    BROKEN = "broken"


@dataclass(frozen=True, slots=True)
class Customer:
    id: str
    headers: dict[str, str]


@dataclass(frozen=True, slots=True)
class Creation:
    """One ``POST /orders``: whose, its unique note, its key (if any) and its body."""

    customer: Customer
    note: str
    key: str | None
    body: dict[str, Any]
    order_id: str | None  # from a 201


@dataclass(frozen=True, slots=True)
class Outcome:
    action: str
    started: float  # time.monotonic()
    finished: float
    status: int | None
    verdict: Verdict
    detail: str  # the error code of a refusal, the reason of a breakage
    creation: Creation | None = None

    def describe(self, origin: float) -> str:
        return (
            f"{self.action} at +{self.started - origin:.2f}s "
            f"({self.finished - self.started:.2f}s): {self.status} {self.detail}"
        )


def judge(action: str, response: httpx.Response) -> tuple[Verdict, str]:
    """The verdict on one answer (see the module docstring)."""
    if not response.headers.get("x-request-id"):
        return Verdict.BROKEN, "no X-Request-ID"
    expected = 201 if action.startswith("orders.create") else 200
    status = response.status_code
    try:
        body = response.json()
    except ValueError:
        return Verdict.BROKEN, f"not JSON: {response.text[:120]!r}"
    if status == expected:
        if action == "books.read" and (body.get("errors") or not body.get("data")):
            return Verdict.BROKEN, f"a 200 hiding a failure: {response.text[:200]}"
        return Verdict.OK, ""
    code = REFUSAL_CODES.get(status)
    error = body.get("error") if isinstance(body, dict) else None
    if code is None or not isinstance(error, dict):
        return Verdict.BROKEN, response.text[:300]
    if error.get("code") != code or not isinstance(error.get("message"), str):
        return Verdict.BROKEN, f"not the contract's {code}: {response.text[:300]}"
    if set(body) != {"error"} or not set(error) <= {"code", "message", "fields"}:
        return Verdict.BROKEN, f"not the contract's shape: {response.text[:300]}"
    if status == 503 and not response.headers.get("retry-after"):
        return Verdict.BROKEN, "503 without Retry-After"
    return Verdict.REFUSED, code


class Traffic:
    """Requests at ``rate_per_s``, round robin over ``ACTIONS`` and ``customers``."""

    def __init__(
        self,
        gateway_url: str,
        customers: Sequence[Customer],
        book_ids: Sequence[str],
        *,
        rate_per_s: float,
        answer_within_s: float,
        max_in_flight: int = 200,
        max_requests: int = 2_000,
    ) -> None:
        self.customers = customers
        self.book_ids = book_ids
        self.interval_s = 1.0 / rate_per_s
        self.answer_within_s = answer_within_s
        self.max_in_flight = max_in_flight
        self.max_requests = max_requests
        self.outcomes: list[Outcome] = []
        self.not_sent = 0  # ticks skipped because max_in_flight requests were pending
        self.origin = time.monotonic()
        self._client = httpx.AsyncClient(
            base_url=gateway_url,
            timeout=answer_within_s,
            limits=httpx.Limits(max_connections=max_in_flight, max_keepalive_connections=32),
        )
        self._in_flight: set[asyncio.Task[None]] = set()
        self._generator: asyncio.Task[None] | None = None
        self._counter = itertools.count()

    async def __aenter__(self) -> Traffic:
        self.origin = time.monotonic()
        self._generator = asyncio.create_task(self._generate(), name="traffic")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._generator is not None:
            self._generator.cancel()
            await asyncio.gather(self._generator, return_exceptions=True)
        # Each request ends by itself within answer_within_s (the client's timeout).
        await asyncio.gather(*self._in_flight, return_exceptions=True)
        await self._client.aclose()

    async def run_until(self, moment: float) -> None:
        """Let the traffic flow until ``moment`` (time.monotonic()); fail if it stopped."""
        await asyncio.sleep(max(0.0, moment - time.monotonic()))
        if self._generator is not None and self._generator.done():
            self._generator.result()  # re-raise what stopped it
            raise AssertionError(f"the traffic stopped early (max_requests={self.max_requests})")

    async def _generate(self) -> None:
        next_at = time.monotonic()
        for number in range(self.max_requests):
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            next_at += self.interval_s
            if len(self._in_flight) >= self.max_in_flight:
                self.not_sent += 1
                continue
            task = asyncio.create_task(self._one(ACTIONS[number % len(ACTIONS)]))
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)

    async def _one(self, action: str) -> None:
        number = next(self._counter)
        customer = self.customers[number % len(self.customers)]
        creation: Creation | None = None
        started = time.monotonic()
        try:
            if action.startswith("orders.create"):
                creation = self._new_creation(customer, keyed=action.endswith("keyed"))
                response = await send_creation(self._client, creation)
            else:
                response = await self._read(action, customer)
        except httpx.TimeoutException:
            self._record(action, started, None, Verdict.BROKEN, "no answer in time", creation)
            return
        except httpx.TransportError as error:
            self._record(action, started, None, Verdict.BROKEN, f"no answer: {error!r}", creation)
            return
        verdict, detail = judge(action, response)
        if creation is not None and verdict is Verdict.OK:
            creation = _with_order_id(creation, response)
        self._record(action, started, response.status_code, verdict, detail, creation)

    def _new_creation(self, customer: Customer, *, keyed: bool) -> Creation:
        note = f"fault-{uuid.uuid4().hex}"
        book = self.book_ids[len(self.outcomes) % len(self.book_ids)]
        body = {"items": [{"bookId": book, "quantity": 1}], "note": note}
        return Creation(customer, note, uuid.uuid4().hex if keyed else None, body, None)

    async def _read(self, action: str, customer: Customer) -> httpx.Response:
        if action == "gateway.health":
            return await self._client.get("/health")
        if action == "users.read":
            return await self._client.get(f"/api/users/{customer.id}", headers=customer.headers)
        if action == "orders.read":
            return await self._client.get("/orders?limit=5", headers=customer.headers)
        return await self._client.post("/graphql", json=BOOKS_QUERY)

    def _record(
        self,
        action: str,
        started: float,
        status: int | None,
        verdict: Verdict,
        detail: str,
        creation: Creation | None,
    ) -> None:
        finished = time.monotonic()
        if verdict is not Verdict.BROKEN and finished - started > self.answer_within_s:
            verdict, detail = Verdict.BROKEN, f"answered after {finished - started:.2f}s"
        self.outcomes.append(Outcome(action, started, finished, status, verdict, detail, creation))


async def send_creation(client: httpx.AsyncClient, creation: Creation) -> httpx.Response:
    """``POST /orders`` with the creation's body, as its customer, with its key if any."""
    headers = dict(creation.customer.headers)
    if creation.key is not None:
        headers["Idempotency-Key"] = creation.key
    return await client.post("/orders", json=creation.body, headers=headers)


def _with_order_id(creation: Creation, response: httpx.Response) -> Creation:
    order = response.json()["data"]
    return Creation(creation.customer, creation.note, creation.key, creation.body, order["id"])
