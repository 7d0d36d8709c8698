"""The records as stored (never sent as is: see schemas): users, their counts per role,
sessions (refresh-token families) with their refresh tokens, the single-use tokens and
requests of email verification and password reset, and API keys."""

from __future__ import annotations

from uuid import UUID

from tortoise import fields
from tortoise.indexes import Index
from tortoise.models import Model

from api_shared.auth import Role

# The outbox's tables live in this service's database: imported here, Tortoise (and
# ``makemigrations``) counts them among this service's models.
from api_shared.events.models import EventSequence, OutboxEvent
from api_shared.mail.models import OutboxMail

__all__ = [
    "AccountToken",
    "ApiKey",
    "EventSequence",
    "OutboxEvent",
    "OutboxMail",
    "PasswordResetRequest",
    "RefreshToken",
    "Session",
    "User",
    "UserCount",
]

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
    # True once the owner of ``email`` proved it (a verification link, or a password reset
    # sent there); false again when the email changes.
    email_verified = fields.BooleanField(default=False)
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


class AccountToken(Model):
    """A single-use token mailed to a user: an email verification or a password reset.

    Stored only as the SHA-256 of the token (256 random bits), bound to the address it was
    sent to: it is void once the user's email is another one. ``used_at`` is set when it is
    redeemed, and when a later request or a password change voids it.
    """

    token_hash = fields.CharField(max_length=64, primary_key=True)
    user: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "models.User", related_name="account_tokens", on_delete=fields.CASCADE, db_index=False
    )
    user_id: UUID
    purpose = fields.CharField(max_length=32)  # ports.TokenPurpose
    email = fields.CharField(max_length=320)
    created_at = fields.DatetimeField()
    expires_at = fields.DatetimeField(db_index=True)
    used_at = fields.DatetimeField(null=True)

    class Meta:
        table = "account_tokens"
        # The hourly limits count a user's, and an address's, recent tokens of a purpose.
        indexes = (
            Index(fields=("user_id", "purpose", "created_at"), name="account_tokens_user"),
            Index(fields=("email", "purpose", "created_at"), name="account_tokens_email"),
        )


class PasswordResetRequest(Model):
    """A ``POST /api/password-reset-requests``, queued.

    Answered 202 at once, whoever the address belongs to, and handled afterwards
    (``account_mail.ResetRequestWorker``).

    Writing this one row is all the request does, for a known address and an unknown one
    alike: the answer and its time tell nothing. Committed before the 202, so a restart
    loses no request.
    """

    id = fields.BigIntField(primary_key=True)
    email = fields.CharField(max_length=320)
    created_at = fields.DatetimeField()
    handled_at = fields.DatetimeField(null=True)

    class Meta:
        table = "password_reset_requests"
        indexes = (Index(fields=("handled_at", "id"), name="password_reset_requests_pending"),)


API_KEY_NAME_MAX_LENGTH = 100
API_KEY_PREFIX_LENGTH = 12  # "ak_live_" and 4 characters of the secret: enough to tell keys apart
API_KEY_SCOPES_MAX_LENGTH = 255  # every scope there is fits in half of it


class ApiKey(Model):
    """A machine client's credential, stored only as the SHA-256 of the whole key.

    ``scopes`` is the key's set of scopes as one text, sorted and space-separated (OAuth's
    ``scope`` form, RFC 6749 §3.3; a scope holds no space): it is only ever read whole with
    the key, never searched, and a plain text column reads alike on SQLite and PostgreSQL,
    where a JSON column would not. Revoked by deleting the row; the user's deletion takes
    their keys with it (ON DELETE CASCADE).
    """

    id = fields.UUIDField(primary_key=True)
    user: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "models.User", related_name="api_keys", on_delete=fields.CASCADE, db_index=False
    )
    user_id: UUID
    name = fields.CharField(max_length=API_KEY_NAME_MAX_LENGTH)
    prefix = fields.CharField(max_length=API_KEY_PREFIX_LENGTH)
    secret_hash = fields.CharField(max_length=64, unique=True)
    scopes = fields.CharField(max_length=API_KEY_SCOPES_MAX_LENGTH)
    created_at = fields.DatetimeField()
    expires_at = fields.DatetimeField(null=True)
    # Kept to the minute: written at most once a minute per key, not on every request.
    last_used_at = fields.DatetimeField(null=True)

    class Meta:
        table = "api_keys"
        # A user's keys (the list, the per-user limit), in the list's orders.
        indexes = (
            Index(fields=("user_id", "created_at", "id"), name="api_keys_user_created_id"),
            Index(fields=("user_id", "last_used_at", "id"), name="api_keys_user_used_id"),
        )
