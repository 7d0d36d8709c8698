"""The order record as stored."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model


class Order(Model):
    id = fields.UUIDField(primary_key=True)
    user_id = fields.UUIDField(db_index=True)
    status = fields.CharField(max_length=16, default="pending")
    created_at = fields.DatetimeField(auto_now_add=True)
    updated_at = fields.DatetimeField(auto_now=True)

    class Meta:
        table = "orders"
