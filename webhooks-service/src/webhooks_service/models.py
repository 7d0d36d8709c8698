"""Endpoints, deliveries and attempts as stored (never sent as is: see schemas)."""

from __future__ import annotations

from enum import StrEnum

from tortoise import fields
from tortoise.indexes import Index
from tortoise.models import Model


class DisabledReason(StrEnum):
    """Why an endpoint is disabled: its owner lost admin or their account, an admin said so,
    or it kept failing."""

    OWNER_NOT_ADMIN = "owner-not-admin"  # the owner's role changed
    OWNER_SUSPENDED = "owner-suspended"  # the owner's account was suspended
    OWNER_DELETED = "owner-deleted"  # the owner's account was deleted
    # The owner of the account's address took it back (users.user.claimed): whoever
    # registered the endpoint held the account before, unverified.
    ACCOUNT_CLAIMED = "account-claimed"
    BY_ADMIN = "by-admin"  # PATCH {"enabled": false}
    FAILING = "failing"  # no attempt succeeded for WEBHOOK_DISABLE_AFTER_S (maintenance)


class Audience(StrEnum):
    """Whose events an endpoint receives (docs/api.md#webhooks)."""

    ALL = "all"  # every event of its types: an admin's endpoint
    OWNER = "owner"  # only the events about its owner's own resources (personal_data)


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
    # Who registered it, and who answers for it now: its creator, or (an ``all`` endpoint)
    # the admin who last enabled it. Null for endpoints registered before owners were
    # recorded.
    created_by = fields.CharField(max_length=255, null=True)
    owner_id = fields.CharField(max_length=255, null=True)
    # Fixed at creation. The database's default keeps rows written by replicas that do not
    # know the column (1.1.0, during an upgrade) receiving what they received before.
    audience = fields.CharEnumField(
        Audience, max_length=16, default=Audience.ALL, db_default=Audience.ALL.value
    )
    # A disabled endpoint gets no new deliveries and its pending ones wait (docs/api.md#webhooks).
    enabled = fields.BooleanField(default=True, db_default=True)
    disabled_reason = fields.CharEnumField(DisabledReason, max_length=32, null=True)
    disabled_at = fields.DatetimeField(null=True)
    # Its first failed attempt since its last successful one (or since an admin enabled it);
    # null while the last attempt succeeded. Past WEBHOOK_DISABLE_AFTER_S, the dispatcher's
    # upkeep disables the endpoint (reason ``failing``).
    failing_since = fields.DatetimeField(null=True)
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


class LoggedEvent(Model):
    """One event the platform published (or webhooks-service made), kept for the event log
    (``GET /api/events``, docs/api.md#event-log) for EVENTS_HISTORY_RETENTION_S.

    ``payload`` is the event's JSON exactly as received, like a delivery's. ``user_id`` is the
    user whose personal data it carries (personal_data.concerned_user): whose history it is
    part of, and whose deletion redacts it (and then it is nobody's). ``time`` is the event's
    own ``time``; ``recorded_at`` when it was written here (the purge's clock).
    ``position`` is the order events were logged in, and committed in: 1, 2, 3… with a gap
    only where a write failed (``EventLogRepository.record``). The event stream resumes after
    an event by it (``Last-Event-ID``, docs/api.md#event-stream).
    """

    id = fields.UUIDField(primary_key=True)
    position = fields.BigIntField(unique=True)
    event_id = fields.CharField(max_length=255, unique=True)
    type = fields.CharField(max_length=255)
    subject = fields.CharField(max_length=255)
    user_id = fields.CharField(max_length=255, null=True)
    stream = fields.CharField(max_length=64)
    stream_sequence = fields.BigIntField()
    time = fields.DatetimeField()
    payload = fields.TextField()
    recorded_at = fields.DatetimeField()

    class Meta:
        table = "webhook_event_log"
        indexes = (
            Index(fields=("user_id", "time", "id"), name="webhook_event_log_user_time"),
            Index(fields=("time", "id"), name="webhook_event_log_time"),
            Index(fields=("type",), name="webhook_event_log_type"),
            Index(fields=("subject",), name="webhook_event_log_subject"),
            Index(fields=("recorded_at",), name="webhook_event_log_recorded"),
        )
