"""Endpoints, deliveries and attempts as stored (never sent as is: see schemas)."""

from __future__ import annotations

from enum import StrEnum

from tortoise import fields
from tortoise.indexes import Index
from tortoise.models import Model


class DisabledReason(StrEnum):
    """Why an endpoint is disabled: its owner is no longer an active admin, or an admin said so."""

    OWNER_NOT_ADMIN = "owner-not-admin"  # the owner's role changed
    OWNER_SUSPENDED = "owner-suspended"  # the owner's account was suspended
    OWNER_DELETED = "owner-deleted"  # the owner's account was deleted
    BY_ADMIN = "by-admin"  # PATCH {"enabled": false}


class Endpoint(Model):
    """A URL events are POSTed to, the types it wants, and the secret deliveries are signed with.

    ``event_types`` is a JSON list of types and ``prefix.*`` patterns (docs/api.md#webhooks).
    The secret must be readable to sign with, so it cannot be hashed: it is stored sealed
    (``secret_box``: Fernet under WEBHOOK_SECRETS_KEY_FILE) and shown to no one after creation
    or rotation. ``previous_secret`` (sealed too) is the one a rotation replaced: it signs
    beside the new one until ``previous_secret_until``.
    """

    id = fields.UUIDField(primary_key=True)
    url = fields.CharField(max_length=2048)
    event_types: fields.Field[list[str]] = fields.JSONField()
    description = fields.CharField(max_length=500, default="")
    secret = fields.TextField()
    # Tortoise types a TextField as str, null or not.
    previous_secret: str | None = fields.TextField(null=True)
    previous_secret_until = fields.DatetimeField(null=True)
    # Who registered it, and the admin answerable for it now: its creator, or the admin who
    # last enabled it. Null for endpoints registered before owners were recorded.
    created_by = fields.CharField(max_length=255, null=True)
    owner_id = fields.CharField(max_length=255, null=True)
    # A disabled endpoint gets no new deliveries and its pending ones wait (docs/api.md#webhooks).
    enabled = fields.BooleanField(default=True, db_default=True)
    disabled_reason = fields.CharEnumField(DisabledReason, max_length=32, null=True)
    disabled_at = fields.DatetimeField(null=True)
    created_at = fields.DatetimeField()
    updated_at = fields.DatetimeField()
    deliveries: fields.ReverseRelation[Delivery]

    class Meta:
        table = "webhook_endpoints"
        indexes = (
            Index(fields=("created_at", "id"), name="webhook_endpoints_created_id"),
            Index(fields=("owner_id",), name="webhook_endpoints_owner"),
        )


class DeliveryStatus(StrEnum):
    PENDING = "pending"  # waiting for its next attempt (or being attempted)
    DELIVERED = "delivered"  # a 2xx answer
    FAILED = "failed"  # every attempt of the schedule failed; may be replayed


class Delivery(Model):
    """One event for one endpoint: the durable queue the dispatcher works from.

    ``payload`` is the event's JSON exactly as received (the signed body). ``stream`` and
    ``stream_sequence`` are the event's place in JetStream: within one endpoint and subject,
    deliveries go out in that order. ``next_attempt_at`` is when it is due; a dispatcher
    claiming it moves it past the attempt's timeout (a lease: if that dispatcher dies, the
    delivery is due again then), and ``claim`` names the claim, so that only its holder
    records the outcome.
    """

    id = fields.UUIDField(primary_key=True)
    endpoint: fields.ForeignKeyRelation[Endpoint] = fields.ForeignKeyField(
        "models.Endpoint", related_name="deliveries", on_delete=fields.CASCADE
    )
    event_id = fields.CharField(max_length=255)
    event_type = fields.CharField(max_length=255)
    subject = fields.CharField(max_length=255)
    stream = fields.CharField(max_length=64)
    stream_sequence = fields.BigIntField()
    payload = fields.TextField()
    # The user whose personal data the payload carries (personal_data.concerned_user): their
    # deletion redacts it. Null: nobody's, or redacted already.
    user_id = fields.CharField(max_length=255, null=True)
    status = fields.CharEnumField(DeliveryStatus, max_length=16, default=DeliveryStatus.PENDING)
    attempt_count = fields.IntField(default=0)
    # Failed attempts since the delivery was created or last replayed: the backoff's step.
    failures = fields.IntField(default=0)
    next_attempt_at = fields.DatetimeField(null=True)
    claim = fields.UUIDField(null=True)
    created_at = fields.DatetimeField()
    updated_at = fields.DatetimeField()

    endpoint_id: str

    class Meta:
        table = "webhook_deliveries"
        # One delivery per event and endpoint: an event seen twice (redelivered) adds none.
        unique_together = (("endpoint_id", "event_id"),)
        indexes = (
            Index(fields=("status", "next_attempt_at"), name="webhook_deliveries_due"),
            Index(
                fields=("endpoint_id", "subject", "stream", "stream_sequence"),
                name="webhook_deliveries_order",
            ),
            Index(fields=("endpoint_id", "created_at", "id"), name="webhook_deliveries_listed"),
            Index(fields=("user_id",), name="webhook_deliveries_user"),
            Index(fields=("created_at",), name="webhook_deliveries_created"),
        )


class Attempt(Model):
    """One POST of a delivery: the status answered (or the error), and how long it took."""

    id = fields.UUIDField(primary_key=True)
    delivery: fields.ForeignKeyRelation[Delivery] = fields.ForeignKeyField(
        "models.Delivery", related_name="attempts", on_delete=fields.CASCADE
    )
    attempted_at = fields.DatetimeField()
    status_code = fields.IntField(null=True)
    error = fields.CharField(max_length=500, null=True)
    duration_ms = fields.IntField()

    delivery_id: str

    class Meta:
        table = "webhook_attempts"
        indexes = (Index(fields=("delivery_id", "attempted_at"), name="webhook_attempts_of"),)


class ErasedUser(Model):
    """A user users-service deleted: events about them that arrive later are stored redacted
    (JetStream's streams are read independently, so an order's event may come after its
    user's deletion). Kept as long as deliveries are (WEBHOOK_DELIVERY_RETENTION_S)."""

    user_id = fields.CharField(max_length=255, primary_key=True)
    erased_at = fields.DatetimeField()

    class Meta:
        table = "webhook_erased_users"
