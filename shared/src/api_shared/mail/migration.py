"""The mail outbox's table as migration operations, for each sending service's migration.

Written out as ``makemigrations`` writes them, not read from the model: a migration already
applied must stay what it was when the model changes (a change is a new operation in a new
migration of each service). As ``api_shared.events.migration``.
"""

from __future__ import annotations

from tortoise import fields
from tortoise.indexes import Index
from tortoise.migrations import operations as ops
from tortoise.migrations.operations import Operation

APP_LABEL = "models"  # api_shared.database.APP_LABEL: every service's one app


def mail_outbox_operations() -> list[Operation]:
    """Create ``outbox_mail`` (with its unique Message-ID and its index of due rows)."""
    return [
        ops.CreateModel(
            name="OutboxMail",
            fields=[
                (
                    "id",
                    fields.BigIntField(
                        generated=True, primary_key=True, unique=True, db_index=True
                    ),
                ),
                ("message_id", fields.CharField(unique=True, max_length=255)),
                ("recipient", fields.CharField(max_length=320)),
                ("subject", fields.CharField(max_length=255)),
                ("text", fields.TextField(unique=False)),
                ("html", fields.TextField(unique=False)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ("attempts", fields.IntField(default=0)),
                ("next_attempt_at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ("sent_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("last_error", fields.CharField(null=True, max_length=500)),
            ],
            options={
                "table": "outbox_mail",
                "app": APP_LABEL,
                "indexes": [Index(fields=["sent_at", "next_attempt_at"], name="outbox_mail_due")],
                "pk_attr": "id",
                "table_description": (
                    "One mail, written in the transaction of the change it tells of, sent later."
                ),
            },
            bases=["Model"],
        ),
    ]
