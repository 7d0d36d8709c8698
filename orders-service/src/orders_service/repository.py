"""Tortoise queries for orders and idempotency records; nothing else in the service touches the ORM.

They implement the interfaces of ``orders_service.ports``. Every write that must not race is
one conditional statement whose row count says who won.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any
from uuid import UUID

import orjson
from tortoise.exceptions import IntegrityError
from tortoise.expressions import F

from api_shared.paging import page_order
from api_shared.transactions import in_transaction
from orders_service.models import IdempotencyRecord, IdempotencyState, Order
from orders_service.ports import OrderQuery, OrderValues, StoredItems, StoredResponse


class TortoiseUnitOfWork:
    """Tortoise transactions: the queries awaited inside one run on its connection."""

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        async with in_transaction():
            yield


class OrderRepository:
    async def get(self, order_id: UUID) -> Order | None:
        return await Order.get_or_none(id=order_id)

    async def create(
        self, *, user_id: UUID, items: StoredItems, note: str | None, now: datetime
    ) -> Order:
        order = Order.pending(user_id=user_id, items=items, note=note, now=now)
        await order.save(force_create=True)
        return order

    async def update_if_version(
        self, order: Order, values: OrderValues, *, now: datetime
    ) -> Order | None:
        """Write ``values`` only if the order still has ``order.version``.

        One ``UPDATE ... WHERE id = ? AND version = ?``: of concurrent writers starting from the
        same version exactly one succeeds. Returns the order as written, or None when it changed
        (or vanished) meanwhile.
        """
        changed = await Order.filter(id=order.id, version=order.version).update(
            items=values.items,
            note=values.note,
            status=values.status,
            updated_at=now,
            version=F("version") + 1,
        )
        if changed != 1:
            return None
        order.items, order.note, order.status = values.items, values.note, values.status
        order.updated_at, order.version = now, order.version + 1
        return order

    async def of_user(self, user_id: UUID) -> list[Order]:
        """Every order of one user, oldest first."""
        return list(await Order.filter(user_id=user_id).order_by("created_at", "id"))

    async def delete_if_version(self, order: Order) -> bool:
        """Delete the order only if it still has ``order.version``."""
        deleted = await Order.filter(id=order.id, version=order.version).delete()
        return deleted == 1

    async def page(self, query: OrderQuery) -> tuple[list[Order], int]:
        """One page of orders and the count of all that match.

        The id breaks ties in the same direction, so pages never skip or repeat a row.
        """
        conditions: dict[str, Any] = {}
        if query.user_id is not None:
            conditions["user_id"] = query.user_id
        if query.status is not None:
            conditions["status"] = query.status
        matching = Order.filter(**conditions)
        ordering = page_order(query.sort, descending=query.descending)
        rows = await matching.order_by(*ordering).offset(query.offset).limit(query.limit)
        return list(rows), await matching.count()


class IdempotencyRepository:
    async def insert_claim(
        self, *, user_id: UUID, key: str, fingerprint: str, token: UUID, now: datetime
    ) -> UUID | None:
        """Insert an in-progress record (committed at once); None when the key is taken."""
        record = IdempotencyRecord.claimed(
            user_id=user_id, key=key, fingerprint=fingerprint, token=token, now=now
        )
        try:
            await record.save(force_create=True)
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

    async def complete(self, record_id: UUID, *, token: UUID, response: StoredResponse) -> bool:
        """Store the response, if ``token`` still holds the claim."""
        completed = await IdempotencyRecord.filter(
            id=record_id, claim_token=token, state=IdempotencyState.IN_PROGRESS
        ).update(
            state=IdempotencyState.COMPLETED,
            response_status=response.status,
            response_body=orjson.dumps(response.body).decode(),
            response_headers=response.headers,
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
