"""The order and idempotency records as stored (never sent as is: see schemas)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID, uuid4

from tortoise import fields
from tortoise.indexes import Index
from tortoise.models import Model

# The outbox's tables live in this service's database: imported here, Tortoise (and
# ``makemigrations``) counts them among this service's models.
from api_shared.events.models import EventSequence, OutboxEvent

__all__ = [
    "EventSequence",
    "IdempotencyRecord",
    "IdempotencyState",
    "Order",
    "OrderStatus",
    "OutboxEvent",
]


class OrderStatus(StrEnum):
    PENDING = "pending"
    CONFIRMED = "confirmed"
    SHIPPED = "shipped"
    DELIVERED = "delivered"
    CANCELLED = "cancelled"


class Order(Model):
    """One order.

    ``items`` is a JSON column (``[{"book_id", "quantity"}, ...]``), not a child table, because
    items have no identity or life of their own: they are at most 50, always read with their
    order, never queried on their own, and every write replaces the list whole (PUT, and PATCH
    per JSON Merge Patch). Keeping them in the order's row makes every change one single-row
    ``UPDATE ... WHERE id = ? AND version = ?``: atomic without a transaction, and lists need no
    second query. (A foreign key to books is impossible anyway: the catalog is another service.)

    ``version`` starts at 1 and grows by one on every change; the ETag is made from it.
    """

    id = fields.UUIDField(primary_key=True)
    user_id = fields.UUIDField()
    status = fields.CharEnumField(OrderStatus, max_length=16, default=OrderStatus.PENDING)
    items: fields.Field[list[dict[str, Any]]] = fields.JSONField()
    note = fields.CharField(max_length=500, null=True)
    version = fields.IntField(default=1)
    # Set by the service's clock (not auto_now): conditional updates go through
    # ``QuerySet.update``, which does not apply auto_now.
    created_at = fields.DatetimeField()
    updated_at = fields.DatetimeField()

    @classmethod
    def pending(
        cls, *, user_id: UUID, items: list[dict[str, Any]], note: str | None, now: datetime
    ) -> Order:
        """A new order, not saved yet: pending, at version 1."""
        return cls(
            id=uuid4(),
            user_id=user_id,
            status=OrderStatus.PENDING,
            items=items,
            note=note,
            version=1,
            created_at=now,
            updated_at=now,
        )

    class Meta:
        table = "orders"
        # Every list query is (optional user) + (optional status) + one sort, id breaking ties.
        indexes = (
            Index(fields=("created_at", "id"), name="orders_created_id"),
            Index(fields=("updated_at", "id"), name="orders_updated_id"),
            Index(fields=("user_id", "created_at", "id"), name="orders_user_created_id"),
            Index(fields=("user_id", "updated_at", "id"), name="orders_user_updated_id"),
            Index(fields=("status", "created_at", "id"), name="orders_status_created_id"),
            Index(fields=("status", "updated_at", "id"), name="orders_status_updated_id"),
            Index(
                fields=("user_id", "status", "created_at", "id"),
                name="orders_user_status_created_id",
            ),
            Index(
                fields=("user_id", "status", "updated_at", "id"),
                name="orders_user_status_updated_id",
            ),
        )


class IdempotencyState(StrEnum):
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"


class IdempotencyRecord(Model):
    """One ``Idempotency-Key`` of one user: its claim while running, then the stored response.

    The unique (user_id, key) constraint is what makes creation exactly-once: of concurrent
    requests with one key, exactly one can insert the claim. ``claim_token`` fences the
    claimant: only the holder of the current token may complete or release the record.
    """

    id = fields.UUIDField(primary_key=True)
    user_id = fields.UUIDField()
    key = fields.CharField(max_length=255)
    fingerprint = fields.CharField(max_length=64)
    state = fields.CharEnumField(IdempotencyState, max_length=16)
    claim_token = fields.UUIDField()
    claimed_at = fields.DatetimeField()
    created_at = fields.DatetimeField(db_index=True)
    response_status = fields.IntField(null=True)
    # Text, not JSON(B): PostgreSQL's JSONB reorders keys, and a replay should be byte-identical.
    response_body = fields.TextField(null=True)
    response_headers: fields.Field[dict[str, str] | None] = fields.JSONField(null=True)

    @classmethod
    def claimed(
        cls, *, user_id: UUID, key: str, fingerprint: str, token: UUID, now: datetime
    ) -> IdempotencyRecord:
        """A new record, not saved yet: claimed with ``token``, in progress."""
        return cls(
            id=uuid4(),
            user_id=user_id,
            key=key,
            fingerprint=fingerprint,
            state=IdempotencyState.IN_PROGRESS,
            claim_token=token,
            claimed_at=now,
            created_at=now,
        )

    class Meta:
        table = "idempotency_records"
        unique_together = (("user_id", "key"),)
