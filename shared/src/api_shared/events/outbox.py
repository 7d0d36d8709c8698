"""Writing events: ``Outbox.record`` adds one to the caller's open transaction.

Never "change, commit, then publish": a crash in between would lose the event. The row
commits or rolls back with the change it describes; the relay publishes it afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from tortoise import connections
from tortoise.backends.base.client import BaseDBAsyncClient, TransactionalDBClient

from api_shared.events.catalog import EventCatalog
from api_shared.events.envelope import CloudEvent
from api_shared.events.models import OutboxEvent
from api_shared.events.wake import CHANNEL, wake_local_relays
from api_shared.transactions import after_commit

CONNECTION = "default"


class OutsideTransactionError(RuntimeError):
    """``record`` was called with no transaction open: the event would not be atomic."""


class Outbox:
    """Records the events of one service, those its ``catalog`` declares (any other type
    raises ``UndeclaredEventError``: the service's AsyncAPI document would not describe it)."""

    def __init__(self, catalog: EventCatalog, *, enabled: bool = True) -> None:
        self.catalog = catalog
        self.enabled = enabled  # EVENTS_ENABLED

    @property
    def source(self) -> str:
        return self.catalog.source

    async def record(self, type: str, subject: str, data: Mapping[str, Any]) -> CloudEvent:
        """Write the event in the transaction the caller has open; return it, sequenced.

        Disabled, nothing is written and the event comes back unsequenced; an undeclared
        type or a call outside a transaction is refused either way (the mistake must not
        hide behind the switch).
        """
        self.catalog.check(type)
        connection = connections.get(CONNECTION)
        if not isinstance(connection, TransactionalDBClient):
            raise OutsideTransactionError(f"{type} must be recorded in its change's transaction")
        event = CloudEvent(source=self.source, type=type, subject=subject, data=data)
        if not self.enabled:
            return event
        return await record(event, connection)


# PostgreSQL numbers the event and writes its row in one round trip: the counter's upsert
# locks the subject's row until commit (see next_sequence) and feeds the insert, whose
# document is the event's JSON up to its sequence with the number and "}" appended. The
# pg_notify wakes every replica's relay once (and only if) the transaction commits; the
# notifications of one transaction are one (same channel and payload).
_RECORD_ON_POSTGRES = """
WITH numbered AS (
    INSERT INTO event_sequences (subject, last_sequence) VALUES ($1, 1)
    ON CONFLICT (subject) DO UPDATE SET last_sequence = event_sequences.last_sequence + 1
    RETURNING last_sequence
)
INSERT INTO outbox_events (event_id, type, subject, sequence, document, created_at)
SELECT $2, $3, $1, last_sequence, $4 || last_sequence::text || '}', $5
FROM numbered, pg_notify($6, '')
RETURNING sequence
"""


async def record(event: CloudEvent, connection: BaseDBAsyncClient) -> CloudEvent:
    """Give ``event`` its subject's next sequence and insert its row through ``connection``."""
    if connection.capabilities.dialect == "postgres":
        rows = await connection.execute_query_dict(
            _RECORD_ON_POSTGRES,
            [
                event.subject,
                event.id,
                event.type,
                event.to_json_before_sequence().decode(),
                event.time,
                CHANNEL,
            ],
        )
        return replace(event, sequence=int(rows[0]["sequence"]))
    # One process: wake its relay once the row is visible (committed), not before.
    after_commit(wake_local_relays)
    sequenced = replace(event, sequence=await next_sequence(connection, event.subject))
    await OutboxEvent.create(
        event_id=sequenced.id,
        type=sequenced.type,
        subject=sequenced.subject,
        sequence=sequenced.sequence,
        document=sequenced.to_json().decode(),
        created_at=sequenced.time,
        using_db=connection,
    )
    return sequenced


async def next_sequence(connection: BaseDBAsyncClient, subject: str) -> int:
    """One upsert: the subject's counter row stays locked until the transaction ends, so
    concurrent writers of one subject take their numbers (and commit) one after another."""
    marker = "$1" if connection.capabilities.dialect == "postgres" else "?"
    rows = await connection.execute_query_dict(
        "INSERT INTO event_sequences (subject, last_sequence) VALUES "  # noqa: S608 (no input)
        f"({marker}, 1) ON CONFLICT (subject) DO UPDATE "
        "SET last_sequence = event_sequences.last_sequence + 1 RETURNING last_sequence",
        [subject],
    )
    return int(rows[0]["last_sequence"])
