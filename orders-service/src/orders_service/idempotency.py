"""Exactly-once creation with ``Idempotency-Key``: claim, work, complete (or release).

1. **Claim.** Insert an ``in_progress`` record for (user, key) in its own, immediately committed
   statement. The UNIQUE (user_id, key) constraint lets exactly one of any number of
   concurrent requests succeed; because the claim is committed before the work starts, the
   others see it at once instead of blocking on an uncommitted row.
2. A request that loses the insert reads the record: a different fingerprint (sha256 of the
   canonical JSON of the validated body) → 422 IDEMPOTENCY_KEY_REUSED; ``completed`` → the
   stored response; ``in_progress`` → 409 IDEMPOTENCY_IN_PROGRESS. A record older than 24 h
   is ignored (deleted, and the claim retried); one stuck ``in_progress`` past a lease (its
   claimant crashed) may be taken over, atomically, by one retry.
3. **Complete.** The winner creates the order and stores the response in one transaction (one
   unit of work), conditional on still holding the claim token (so a claimant that lost its
   lease cannot complete: its transaction, order included, rolls back).
4. **Release.** If the work fails (unknown book, catalog down, database error, cancelled), the
   claim is deleted so that a retry can run; failures are not stored. When the database is
   down, the deletion fails too: it is retried in the background until it succeeds, so the
   key is free again soon after the database is back, not only once the lease has run out.

Expired records are purged by ``purge_expired``, run periodically by the app.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import orjson

from api_shared.errors import (
    IdempotencyInProgressError,
    IdempotencyKeyReusedError,
    ValidationFailedError,
)
from orders_service.models import IdempotencyState
from orders_service.ports import IdempotencyStore, StoredResponse

HEADER = "Idempotency-Key"
WINDOW = timedelta(hours=24)
LEASE = timedelta(seconds=60)  # far above a create's worst case (catalog timeout + writes)
MAX_KEY_LENGTH = 255
_CLAIM_ATTEMPTS = 5
# Waits between attempts to release a claim while the database is down: quick at first,
# then every second, for as long as the lease (after which a retry may take the key over).
_RELEASE_BACKOFF_S = (0.1, 0.2, 0.5) + (1.0,) * int(LEASE.total_seconds())

logger = logging.getLogger(__name__)

Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class Claim:
    """The right to run the request of one key, held until completed or released."""

    record_id: UUID
    token: UUID


def parse_key(raw: str | None) -> str | None:
    """The header's key, or VALIDATION_FAILED when it is empty, too long or not printable."""
    if raw is None:
        return None
    key = raw.strip()
    if not key or len(key) > MAX_KEY_LENGTH or not key.isascii() or not key.isprintable():
        reason = f"must be 1 to {MAX_KEY_LENGTH} printable ASCII characters"
        raise ValidationFailedError(f"{HEADER} {reason}", fields={HEADER: reason})
    return key


def fingerprint(canonical_body: Any) -> str:
    """sha256 of the body as canonical JSON (sorted keys, no spaces)."""
    return hashlib.sha256(orjson.dumps(canonical_body, option=orjson.OPT_SORT_KEYS)).hexdigest()


class Idempotency:
    def __init__(
        self,
        records: IdempotencyStore,
        clock: Clock,
        *,
        release_backoff_s: tuple[float, ...] = _RELEASE_BACKOFF_S,
    ) -> None:
        self.records = records
        self.clock = clock
        self.release_backoff_s = release_backoff_s
        self._releasing: set[asyncio.Task[None]] = set()

    async def claim(self, *, user_id: UUID, key: str, fingerprint: str) -> Claim | StoredResponse:
        """Claim the key, or the stored response of its first request; else 409 or 422."""
        for _ in range(_CLAIM_ATTEMPTS):
            now, token = self.clock(), uuid4()
            record_id = await self.records.insert_claim(
                user_id=user_id, key=key, fingerprint=fingerprint, token=token, now=now
            )
            if record_id is not None:
                return Claim(record_id, token)
            record = await self.records.find(user_id=user_id, key=key)
            if record is None:
                continue  # released between our insert and our read: try again
            if record.created_at <= now - WINDOW:
                await self.records.delete_if_expired(record.id, cutoff=now - WINDOW)
                continue
            if record.fingerprint != fingerprint:
                raise IdempotencyKeyReusedError()
            if record.state == IdempotencyState.COMPLETED:
                return StoredResponse(
                    status=record.response_status or 200,
                    body=orjson.loads(record.response_body or "{}"),
                    headers=record.response_headers or {},
                )
            if record.claimed_at <= now - LEASE:
                if await self.records.take_over(record, token=token, now=now):
                    return Claim(record.id, token)
                continue
            raise IdempotencyInProgressError()
        raise IdempotencyInProgressError()

    async def once(
        self,
        *,
        user_id: UUID,
        key: str,
        fingerprint: str,
        work: Callable[[Claim], Awaitable[StoredResponse]],
    ) -> tuple[StoredResponse, bool]:
        """Steps 1 to 4: ``work``'s response (which must ``complete`` its claim) and False,
        or the response stored for this key and True; the claim released if ``work`` fails."""
        claimed = await self.claim(user_id=user_id, key=key, fingerprint=fingerprint)
        if isinstance(claimed, StoredResponse):
            return claimed, True
        try:
            response = await work(claimed)
        except BaseException:
            # Shielded: a cancelled request must still free its key for the retry.
            await asyncio.shield(self.release(claimed))
            raise
        return response, False

    async def complete(self, claim: Claim, response: StoredResponse) -> None:
        """Store the response; call inside the transaction that does the work."""
        completed = await self.records.complete(
            claim.record_id, token=claim.token, response=response
        )
        if not completed:
            # Our lease ran out and another request took the key over: let it win.
            raise IdempotencyInProgressError()

    async def release(self, claim: Claim) -> None:
        """Free the key for a retry; if that fails now, keep trying in the background."""
        try:
            await self.records.release(claim.record_id, token=claim.token)
        except Exception as error:
            logger.warning("releasing a claim failed; retrying", extra={"error": repr(error)})
            task = asyncio.create_task(self._release_eventually(claim))
            self._releasing.add(task)  # a strong reference until it is done
            task.add_done_callback(self._releasing.discard)

    async def _release_eventually(self, claim: Claim) -> None:
        for wait_s in self.release_backoff_s:
            await asyncio.sleep(wait_s)
            try:
                await self.records.release(claim.record_id, token=claim.token)
            except Exception:  # noqa: S112 - still down: the next attempt will tell
                continue
            return
        logger.warning("gave up releasing a claim; its lease will free the key")

    async def purge_expired(self) -> int:
        """Delete every record older than the window; returns how many."""
        return await self.records.delete_expired(cutoff=self.clock() - WINDOW)
