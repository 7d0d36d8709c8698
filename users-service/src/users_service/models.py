"""The user records as stored (never sent as is: see schemas), and their counts per role."""

from __future__ import annotations

from enum import StrEnum

from tortoise import fields
from tortoise.indexes import Index
from tortoise.models import Model


class Role(StrEnum):
    CUSTOMER = "customer"
    ADMIN = "admin"


class User(Model):
    id = fields.UUIDField(primary_key=True)
    name = fields.CharField(max_length=100)
    # Stored normalised (lower-cased domain and local part), so a plain unique index is
    # case-insensitive in effect on every database.
    email = fields.CharField(max_length=320, null=True, unique=True)
    password_hash = fields.CharField(max_length=255, null=True)
    role = fields.CharEnumField(Role, max_length=16, default=Role.CUSTOMER)
    created_at = fields.DatetimeField(auto_now_add=True)
    updated_at = fields.DatetimeField(auto_now=True)

    class Meta:
        table = "users"
        # Every allowed sort, with id as the tie-breaker, and the role filter in front.
        indexes = (
            Index(fields=("created_at", "id"), name="users_created_id"),
            Index(fields=("name", "id"), name="users_name_id"),
            Index(fields=("role", "created_at", "id"), name="users_role_created_id"),
            Index(fields=("role", "name", "id"), name="users_role_name_id"),
        )


class UserCount(Model):
    """How many users have ``role``: one row per role, so an exact total costs O(1).

    Kept exact by the repository, which changes it in the same transaction as every insert,
    delete and role change (``n = n + 1``, an atomic row update); ``count(*)`` would scan
    every row of ``users`` on each list request.
    """

    role = fields.CharEnumField(Role, max_length=16, primary_key=True)
    n = fields.BigIntField(default=0)

    class Meta:
        table = "user_counts"
