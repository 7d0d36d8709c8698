"""The outbox's two tables, created by each service's own migration (its models import them)."""

from __future__ import annotations

from tortoise import fields
from tortoise.indexes import Index
from tortoise.models import Model


class OutboxEvent(Model):
    """One event, written in the transaction of the change it describes, published later.

    ``id`` (autoincrement) is the publication order: rows of one subject are inserted one
    transaction after another (their ``EventSequence`` row is locked until commit), so their
    ids grow with their sequence.
    """

    id = fields.BigIntField(primary_key=True)
    event_id = fields.CharField(max_length=64, unique=True)
    type = fields.CharField(max_length=128)
    subject = fields.CharField(max_length=128)
    sequence = fields.BigIntField()
    # The CloudEvents document, exactly as it goes on the wire.
    document = fields.TextField()
    created_at = fields.DatetimeField()
    published_at = fields.DatetimeField(null=True)

    class Meta:
        table = "outbox_events"
        unique_together = (("subject", "sequence"),)
        indexes = (Index(fields=("published_at", "id"), name="outbox_events_unpublished"),)


class EventSequence(Model):
    """The last ``sequence`` given to a subject's events (it outlives purged outbox rows)."""

    subject = fields.CharField(max_length=128, primary_key=True)
    last_sequence = fields.BigIntField()

    class Meta:
        table = "event_sequences"
