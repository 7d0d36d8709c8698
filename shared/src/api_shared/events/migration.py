"""The outbox's tables as migration operations, for each service's own migration to apply.

The shared package owns the outbox models (``models``) but has no migrations of its own:
each publishing service creates the two tables in its migrations, with these operations.
They are the tables' first version, written out as ``makemigrations`` wrote them, not read
from the models: migrations already applied must stay what they were when a model changes
(a change to the outbox is a new operation in a new migration of each service).
"""

from __future__ import annotations

from tortoise import fields
from tortoise.indexes import Index
from tortoise.migrations import operations as ops
from tortoise.migrations.operations import Operation

APP_LABEL = "models"  # api_shared.database.APP_LABEL: every service's one app


def outbox_operations() -> list[Operation]:
    """Create ``event_sequences`` and ``outbox_events`` (with their unique pair and index)."""
    return [
        ops.CreateModel(
            name="EventSequence",
            fields=[
                (
                    "subject",
                    fields.CharField(primary_key=True, unique=True, db_index=True, max_length=128),
                ),
                ("last_sequence", fields.BigIntField()),
            ],
            options={
                "table": "event_sequences",
                "app": APP_LABEL,
                "pk_attr": "subject",
                "table_description": (
                    "The last ``sequence`` given to a subject's events (it outlives purged "
                    "outbox rows)."
                ),
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="OutboxEvent",
            fields=[
                (
                    "id",
                    fields.BigIntField(
                        generated=True, primary_key=True, unique=True, db_index=True
                    ),
                ),
                ("event_id", fields.CharField(unique=True, max_length=64)),
                ("type", fields.CharField(max_length=128)),
                ("subject", fields.CharField(max_length=128)),
                ("sequence", fields.BigIntField()),
                ("document", fields.TextField(unique=False)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
                (
                    "published_at",
                    fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
                ),
            ],
            options={
                "table": "outbox_events",
                "app": APP_LABEL,
                "unique_together": (("subject", "sequence"),),
                "indexes": [Index(fields=["published_at", "id"], name="outbox_events_unpublished")],
                "pk_attr": "id",
                "table_description": (
                    "One event, written in the transaction of the change it describes, "
                    "published later."
                ),
            },
            bases=["Model"],
        ),
    ]
