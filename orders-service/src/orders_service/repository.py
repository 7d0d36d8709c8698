"""Tortoise queries for orders and idempotency records; nothing else in the service touches the ORM.

Every write that must not race is one conditional statement whose row count says who won.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

import orjson
from tortoise.backends.base.client import TransactionContext
from tortoise.exceptions import IntegrityError
from tortoise.expressions import F
from tortoise.transactions import in_transaction

from orders_service.models import IdempotencyRecord, IdempotencyState, Order, OrderStatus

StoredItems = list[dict[str, Any]]
"""Items as stored: ``[{"book_id": str, "quantity": int}, ...]``."""


def transaction() -> TransactionContext:
    """One database transaction: the queries awaited inside it commit or roll back together."""
    return in_transaction()


class OrderRepository:
    async def get(self, order_id: UUID) -> Order | None:
        return await Order.get_or_none(id=order_id)

    async def create(
        self, *, user_id: UUID, items: StoredItems, note: str | None, now: datetime
    ) -> Order:
        return await Order.create(
            id=uuid4(),
            user_id=user_id,
            status=OrderStatus.PENDING,
            items=items,
            note=note,
            version=1,
            created_at=now,
            updated_at=now,
        )

    async def update_if_version(
        self,
        order: Order,
        *,
        items: StoredItems,
        note: str | None,
        status: OrderStatus,
        now: datetime,
    ) -> Order | None:
        """Write the new values only if the order still has ``order.version``.

        One ``UPDATE ... WHERE id = ? AND version = ?``: of concurrent writers starting from the
        same version exactly one succeeds. Returns the order as written, or None when it changed
        (or vanished) meanwhile.
        """
        changed = await Order.filter(id=order.id, version=order.version).update(
            items=items, note=note, status=status, updated_at=now, version=F("version") + 1
        )
        if changed != 1:
            return None
        order.items, order.note, order.status = items, note, status
        order.updated_at, order.version = now, order.version + 1
        return order

    async def delete_if_version(self, order: Order) -> bool:
        """Delete the order only if it still has ``order.version``."""
        deleted = await Order.filter(id=order.id, version=order.version).delete()
        return deleted == 1

    async def page(
        self,
        *,
        user_id: UUID | None,
        status: OrderStatus | None,
        sort: str,
        descending: bool,
        limit: int,
        offset: int,
    ) -> tuple[list[Order], int]:
        """One page of orders and the count of all that match; ``sort`` is a column name.

        The id breaks ties in the same direction, so pages never skip or repeat a row.
        """
        conditions: dict[str, Any] = {}
        if user_id is not None:
            conditions["user_id"] = user_id
        if status is not None:
            conditions["status"] = status
        query = Order.filter(**conditions)
        direction = "-" if descending else ""
        rows = (
            await query.order_by(f"{direction}{sort}", f"{direction}id").offset(offset).limit(limit)
        )
        return list(rows), await query.count()


class IdempotencyRepository:
    async def insert_claim(
        self, *, user_id: UUID, key: str, fingerprint: str, token: UUID, now: datetime
    ) -> UUID | None:
        """Insert an in-progress record (committed at once); None when the key is taken."""
        try:
            record = await IdempotencyRecord.create(
                id=uuid4(),
                user_id=user_id,
                key=key,
                fingerprint=fingerprint,
                state=IdempotencyState.IN_PROGRESS,
                claim_token=token,
                claimed_at=now,
                created_at=now,
            )
        except IntegrityError:
            return None
        return record.id

    async def find(self, *, user_id: UUID, key: str) -> IdempotencyRecord | None:
        return await IdempotencyRecord.get_or_none(user_id=user_id, key=key)

    async def take_over(self, record: IdempotencyRecord, *, token: UUID, now: datetime) -> bool:
        """Re-claim an abandoned in-progress record, unless someone else did first."""
        taken = await IdempotencyRecord.filter(
            id=record.id, claim_token=record.claim_token, state=IdempotencyState.IN_PROGRESS
        ).update(claim_token=token, claimed_at=now)
        return taken == 1

    async def complete(
        self,
        record_id: UUID,
        *,
        token: UUID,
        status: int,
        body: dict[str, Any],
        headers: dict[str, str],
    ) -> bool:
        """Store the response, if ``token`` still holds the claim."""
        completed = await IdempotencyRecord.filter(
            id=record_id, claim_token=token, state=IdempotencyState.IN_PROGRESS
        ).update(
            state=IdempotencyState.COMPLETED,
            response_status=status,
            response_body=orjson.dumps(body).decode(),
            response_headers=headers,
        )
        return completed == 1

    async def release(self, record_id: UUID, *, token: UUID) -> None:
        """Delete an in-progress record, if ``token`` still holds the claim."""
        await IdempotencyRecord.filter(
            id=record_id, claim_token=token, state=IdempotencyState.IN_PROGRESS
        ).delete()

    async def delete_if_expired(self, record_id: UUID, *, cutoff: datetime) -> None:
        await IdempotencyRecord.filter(id=record_id, created_at__lte=cutoff).delete()

    async def delete_expired(self, *, cutoff: datetime) -> int:
        deleted: int = await IdempotencyRecord.filter(created_at__lte=cutoff).delete()
        return deleted


def stored_items(pairs: Sequence[tuple[str, int]]) -> StoredItems:
    return [{"book_id": book_id, "quantity": quantity} for book_id, quantity in pairs]
