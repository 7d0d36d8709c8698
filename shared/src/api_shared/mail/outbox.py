"""Writing mail: ``MailOutbox.record`` adds one to the caller's open transaction.

As with events (``api_shared.events.outbox``): the mail commits or rolls back with the change
it tells of (a sign-up that rolled back sends no welcome); the sender sends it afterwards.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from tortoise import connections
from tortoise.backends.base.client import TransactionalDBClient

from api_shared.events.outbox import CONNECTION, OutsideTransactionError
from api_shared.mail.message import Mail
from api_shared.mail.models import OutboxMail

__all__ = ["MailOutbox", "OutsideTransactionError", "new_message_id"]


def new_message_id(domain: str) -> str:
    """A new RFC 5322 Message-ID, ``<uuid@domain>``."""
    return f"<{uuid.uuid4()}@{domain}>"


class MailOutbox:
    """Records mail to send; ``domain`` (``MAIL_FROM``'s) ends every Message-ID."""

    def __init__(self, *, domain: str) -> None:
        self.domain = domain

    async def record(self, mail: Mail) -> str:
        """Write ``mail`` in the transaction the caller has open; its Message-ID.

        ``OutsideTransactionError`` with no transaction open: the mail would go out even if
        the change it tells of rolled back.
        """
        connection = connections.get(CONNECTION)
        if not isinstance(connection, TransactionalDBClient):
            raise OutsideTransactionError("a mail must be recorded in its change's transaction")
        message_id = new_message_id(self.domain)
        now = datetime.now(UTC)
        await OutboxMail.create(
            message_id=message_id,
            recipient=mail.to,
            subject=mail.subject,
            text=mail.text,
            html=mail.html,
            created_at=now,
            next_attempt_at=now,
            using_db=connection,
        )
        return message_id
