"""The records as stored (never sent as is: see schemas): users, their counts per role, and
sessions (refresh-token families) with their refresh tokens."""

from __future__ import annotations

from uuid import UUID

from tortoise import fields
from tortoise.indexes import Index
from tortoise.models import Model

from api_shared.auth import Role

# The outbox's tables live in this service's database: imported here, Tortoise (and
# ``makemigrations``) counts them among this service's models.
from api_shared.events.models import EventSequence, OutboxEvent

__all__ = ["EventSequence", "OutboxEvent", "RefreshToken", "Session", "User", "UserCount"]

USER_AGENT_MAX_LENGTH = 255  # longer User-Agent headers are cut, not refused
ADDRESS_MAX_LENGTH = 45  # the longest textual IPv6 address (with an IPv4 tail)


class User(Model):
    id = fields.UUIDField(primary_key=True)
    name = fields.CharField(max_length=100)
    # Stored normalised (lower-cased domain and local part), so a plain unique index is
    # case-insensitive in effect on every database.
    email = fields.CharField(max_length=320, null=True, unique=True)
    password_hash = fields.CharField(max_length=255, null=True)
    role = fields.CharEnumField(Role, max_length=16, default=Role.CUSTOMER)
    # False: suspended by an admin (no login, no refresh, no session); true again lifts it.
    is_active = fields.BooleanField(default=True)
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


class Session(Model):
    """A login and every refresh that followed it (a refresh-token family, RFC 9700 §4.14).

    Ends when revoked (logout, theft detection, a credential change, suspension) or at
    ``expires_at``, the absolute lifetime fixed at login; then it is purged with its tokens.
    """

    id = fields.UUIDField(primary_key=True)
    user: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "models.User", related_name="sessions", on_delete=fields.CASCADE, db_index=False
    )
    user_id: UUID  # the column behind ``user``
    created_at = fields.DatetimeField()
    last_used_at = fields.DatetimeField()
    expires_at = fields.DatetimeField(db_index=True)
    revoked_at = fields.DatetimeField(null=True, db_index=True)
    user_agent = fields.CharField(max_length=USER_AGENT_MAX_LENGTH, null=True)
    address = fields.CharField(max_length=ADDRESS_MAX_LENGTH, null=True)

    class Meta:
        table = "sessions"
        # A user's sessions (the list, and revoking them all), in the list's orders.
        indexes = (
            Index(fields=("user_id", "created_at", "id"), name="sessions_user_created_id"),
            Index(fields=("user_id", "last_used_at", "id"), name="sessions_user_used_id"),
        )


class RefreshToken(Model):
    """One refresh token of a session, stored only as the SHA-256 of the token.

    Spent when exchanged; a spent token presented again is reuse, which ends the session.
    """

    token_hash = fields.CharField(max_length=64, primary_key=True)
    session: fields.ForeignKeyRelation[Session] = fields.ForeignKeyField(
        "models.Session", related_name="tokens", on_delete=fields.CASCADE, db_index=True
    )
    session_id: UUID
    created_at = fields.DatetimeField()
    expires_at = fields.DatetimeField(db_index=True)
    spent_at = fields.DatetimeField(null=True)

    class Meta:
        table = "refresh_tokens"
