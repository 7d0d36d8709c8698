"""The mail outbox's table, created by each sending service's own migration (its models import
it, as they import ``api_shared.events.models``)."""

from __future__ import annotations

from tortoise import fields
from tortoise.indexes import Index
from tortoise.models import Model


class OutboxMail(Model):
    """One mail, written in the transaction of the change it tells of, sent later.

    ``id`` (autoincrement) is the send order. ``message_id`` is the mail's RFC 5322
    Message-ID: a mail sent twice (the sender died between the send and its mark) carries
    the same one, which receivers de-duplicate by.
    """

    id = fields.BigIntField(primary_key=True)
    message_id = fields.CharField(max_length=255, unique=True)
    recipient = fields.CharField(max_length=320)
    subject = fields.CharField(max_length=255)
    text = fields.TextField()
    html = fields.TextField()
    created_at = fields.DatetimeField()
    attempts = fields.IntField(default=0)
    next_attempt_at = fields.DatetimeField()
    sent_at = fields.DatetimeField(null=True)
    last_error = fields.CharField(max_length=500, null=True)

    class Meta:
        table = "outbox_mail"
        indexes = (Index(fields=("sent_at", "next_attempt_at"), name="outbox_mail_due"),)
