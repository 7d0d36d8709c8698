"""One fault, start to finish: traffic, the fault, the way back, and what must hold.

A scenario (``through_a_fault``) drives ``Traffic`` through four moments (all ``time.monotonic()``):
``fault_at`` (the dependency goes away), ``back_at`` (it answers again: ready on its own port,
resumed, or accepting connections), then ``RECOVERY_S`` during which failures may linger,
then ``TAIL_S`` of traffic that must all succeed. ``Findings`` checks the rules of the suite:

1. nothing is ever BROKEN (only 503/504 in the contract's shape, never beyond the timeout);
2. the requests that do not need the dependency are all OK, throughout;
3. the fault was felt (some request that needs it was refused), so the test tests something
   (except where a scenario proves it otherwise: a PostgreSQL restart is over in a blink);
4. every request begun ``RECOVERY_S`` after ``back_at`` is OK: recovery is by itself;
5. the other processes were neither restarted nor stopped;
6. every order answered 201 exists exactly once. A creation refused with an Idempotency-Key
   is created exactly once by retrying it with the same key; without a key, one refused with
   503 is absent, and one answered 504 exists at most once: "no answer in time" leaves the
   outcome unknown, to the gateway too, which is what Idempotency-Key is for.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

import httpx

from ..stack import Stack
from .traffic import NEEDS, Creation, Customer, Outcome, Traffic, Verdict, send_creation

RECOVERY_S = 5.0  # the requirement: normal again within 5 s of the dependency being back
TAIL_S = 1.5  # traffic after that, all of which must succeed
BASELINE_S = 1.0
RETRY_WITHIN_S = 15.0


async def through_a_fault(
    traffic: Traffic,
    inject: Callable[[], Awaitable[None]],
    restore: Callable[[], Awaitable[float]],
    outage_s: float,
) -> tuple[float, float]:
    """Traffic, ``inject`` the fault, keep it ``outage_s``, ``restore``, then recovery and tail.

    ``restore`` returns when (time.monotonic()) the dependency was back; it runs even when
    injecting failed, so a failing scenario leaves the stack whole for the next. Returns
    ``(fault_at, back_at)``.
    """
    await traffic.run_until(traffic.origin + BASELINE_S)
    fault_at = time.monotonic()
    try:
        await inject()
        await traffic.run_until(fault_at + outage_s)
    finally:
        back_at = await restore()
    await traffic.run_until(back_at + RECOVERY_S + TAIL_S)
    return fault_at, back_at


@dataclass
class Findings:
    """What a scenario saw, and the measurements it reports."""

    name: str
    outcomes: Sequence[Outcome]
    origin: float
    fault_at: float
    back_at: float
    down: frozenset[str]
    notes: list[str] = field(default_factory=list)
    expect_refusals: bool = True

    def lines(self, outcomes: Iterable[Outcome], limit: int = 8) -> str:
        shown = [o.describe(self.origin) for o in outcomes]
        more = f"\n... and {len(shown) - limit} more" if len(shown) > limit else ""
        return "\n".join(shown[:limit]) + more

    @property
    def needing(self) -> list[Outcome]:
        return [o for o in self.outcomes if NEEDS[o.action] & self.down]

    @property
    def recovery_s(self) -> float:
        """From ``back_at`` to the start of the last request not OK (0 when none)."""
        late = [o.started - self.back_at for o in self.outcomes if o.verdict is not Verdict.OK]
        return max([0.0, *late])

    @property
    def refused_for_s(self) -> float:
        """How long clients saw refusals: from the first refused request to the last."""
        refused = [o.started for o in self.outcomes if o.verdict is Verdict.REFUSED]
        return max(refused) - min(refused) if refused else 0.0

    def summary(self) -> str:
        refused = sum(o.verdict is Verdict.REFUSED for o in self.outcomes)
        return (
            f"{self.name}: {len(self.outcomes)} requests, {refused} refused (503/504) "
            f"over {self.refused_for_s:.1f}s; dependency away {self.back_at - self.fault_at:.1f}s;"
            f" all OK {self.recovery_s:.2f}s after it was back"
            + "".join(f"; {note}" for note in self.notes)
        )

    def check_traffic(self) -> None:
        """Rules 1 to 4."""
        broken = [o for o in self.outcomes if o.verdict is Verdict.BROKEN]
        assert not broken, f"{self.name}: answers outside the contract:\n{self.lines(broken)}"

        independent = [
            o
            for o in self.outcomes
            if not NEEDS[o.action] & self.down and o.verdict is not Verdict.OK
        ]
        assert not independent, (
            f"{self.name}: requests that do not need {sorted(self.down)} failed:\n"
            f"{self.lines(independent)}"
        )

        felt = [o for o in self.needing if o.verdict is Verdict.REFUSED]
        if self.expect_refusals:
            assert felt, f"{self.name}: no request was refused: was the fault injected at all?"

        settled = [o for o in self.outcomes if o.started >= self.back_at + RECOVERY_S]
        assert len(settled) >= 10, f"{self.name}: only {len(settled)} requests after recovery"
        late = [o for o in settled if o.verdict is not Verdict.OK]
        assert not late, (
            f"{self.name}: still failing {RECOVERY_S}s after the dependency was back:\n"
            f"{self.lines(late)}"
        )


def check_processes(stack: Stack, pids_before: dict[str, int | None], restarted: set[str]) -> None:
    """Rule 5: every process but the restarted ones is the very same, and running."""
    for name, service in stack.services.items():
        assert service.is_running(), f"{name} is not running:\n{service.log_tail()}"
        if name not in restarted:
            assert service.pid == pids_before[name], f"{name} was restarted"


def pids(stack: Stack) -> dict[str, int | None]:
    return {name: service.pid for name, service in stack.services.items()}


async def orders_by_note(
    gateway: httpx.AsyncClient, customers: Sequence[Customer]
) -> dict[str, list[str]]:
    """Every order of ``customers``: their ids by note (notes are unique per creation)."""
    found: dict[str, list[str]] = defaultdict(list)
    for customer in customers:
        offset = 0
        while True:
            response = await gateway.get(
                f"/orders?limit=100&offset={offset}", headers=customer.headers
            )
            assert response.status_code == 200, response.text
            page = response.json()
            for order in page["data"]:
                found[order["note"]].append(order["id"])
            offset += len(page["data"])
            if not page["data"] or offset >= page["page"]["total"]:
                break
    return found


async def retry_until_created(gateway: httpx.AsyncClient, creation: Creation) -> str:
    """Send a refused keyed creation again, as a client would, until it is answered 201."""
    deadline = time.monotonic() + RETRY_WITHIN_S
    last = ""
    while time.monotonic() < deadline:
        response = await send_creation(gateway, creation)
        if response.status_code == 201:
            order_id: str = response.json()["data"]["id"]
            return order_id
        last = f"{response.status_code} {response.text[:200]}"
        # 409 IDEMPOTENCY_IN_PROGRESS: the first attempt still holds the key; wait for it.
        await asyncio.sleep(0.2)
    raise AssertionError(f"retrying key {creation.key} never got 201 (last: {last})")


async def check_orders(gateway: httpx.AsyncClient, traffic: Traffic, findings: Findings) -> None:
    """Rule 6, after the traffic has stopped."""
    creations = [o for o in traffic.outcomes if o.creation is not None]
    retried: dict[str, str] = {}
    for outcome in creations:
        assert outcome.creation is not None
        if outcome.verdict is not Verdict.OK and outcome.creation.key is not None:
            retried[outcome.creation.note] = await retry_until_created(gateway, outcome.creation)
    found = await orders_by_note(gateway, traffic.customers)

    wrong: list[str] = []
    unknown_outcome_present = 0
    for outcome in creations:
        creation = outcome.creation
        assert creation is not None
        ids = found.get(creation.note, [])
        if outcome.verdict is Verdict.OK:
            if ids != [creation.order_id]:
                wrong.append(f"answered 201 as {creation.order_id}, stored as {ids}")
        elif creation.key is not None:
            if ids != [retried[creation.note]]:
                wrong.append(f"key retried as {retried[creation.note]}, stored as {ids}")
        elif outcome.status == 504:
            # No answer in time: the outcome is unknown to the gateway too (that is what
            # Idempotency-Key is for); it may have happened, but at most once.
            unknown_outcome_present += len(ids) == 1
            if len(ids) > 1:
                wrong.append(f"504, then stored {len(ids)} times: {ids}")
        elif ids:
            wrong.append(f"refused with {outcome.status} {outcome.detail}, yet stored as {ids}")
    assert not wrong, f"{findings.name}: orders out of line:\n" + "\n".join(wrong[:10])
    findings.notes.append(
        f"{sum(o.verdict is Verdict.OK for o in creations)} orders created, "
        f"{len(retried)} refused keyed creations retried once each"
        + (
            f", {unknown_outcome_present} orders answered 504 exist"
            if unknown_outcome_present
            else ""
        )
    )
