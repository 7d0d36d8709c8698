"""Rows stored before this version, carried through the migrations on a real database.

The migrations run in a process of their own (``migrate`` and Tortoise keep global state,
which this test process's app holds): the schema of 0001, rows as that version wrote them,
then every migration since, as ``python -m webhooks_service migrate`` applies them.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from typing import Any

import orjson

from api_testkit.databases import temporary_database

SCRIPT = """
import asyncio, sys
import orjson
from tortoise import Tortoise, connections
from tortoise.migrations.api import migrate as migrate_to
from api_shared.database import migrate
from webhooks_service.database import database_config
from webhooks_service.settings import Settings

ENDPOINT = "INSERT INTO webhook_endpoints VALUES ({})"
# How a 1.1.0 replica registers an endpoint beside this version's schema: the columns it knows.
OLDER_REPLICAS_ENDPOINT = (
    "INSERT INTO webhook_endpoints (id, url, event_types, description, secret, created_by,"
    " owner_id, enabled, created_at, updated_at) VALUES ({})"
)
DELIVERY = (
    "INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, subject, stream,"
    " stream_sequence, payload, status, attempt_count, failures, created_at, updated_at)"
    " VALUES ({})"
)

LOGGED = (
    "INSERT INTO webhook_event_log (id, position, event_id, type, subject, user_id, stream,"
    " stream_sequence, time, payload, recorded_at) VALUES ({})"
)

async def main(url, endpoint_id, user_id, later_id):
    config = database_config(Settings(database_url=url))
    await migrate_to(config=config, target="models.0001_initial")
    client = connections.get("default")
    marks = (lambda n: ", ".join(["?"] * n)) if client.capabilities.dialect == "sqlite" else (
        lambda n: ", ".join(f"${i}" for i in range(1, n + 1)))
    now = "2025-01-02T03:04:05+00:00"
    if client.capabilities.dialect == "postgres":
        from datetime import datetime
        now = datetime.fromisoformat(now)
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    await client.execute_query(ENDPOINT.format(marks(7)), [
        endpoint_id, "https://93.184.215.14/in", '["*"]', "", secret, now, now])
    events = [
        ("e-user", "users.user.created", user_id, {"email": "ada@example.com"}),
        ("e-order", "orders.order.created", "order-1", {"userId": user_id}),
        ("e-book", "orders.order.created", "order-2", {}),
    ]
    for n, (event_id, event_type, subject, data) in enumerate(events):
        document = {"id": event_id, "type": event_type, "subject": subject, "data": data}
        payload = orjson.dumps(document).decode()
        await client.execute_query(DELIVERY.format(marks(13)), [
            f"00000000-0000-0000-0000-00000000000{n}", endpoint_id, event_id, event_type, subject,
            "S", n, payload, "pending", 0, 0, now, now])
    await Tortoise.close_connections()
    await migrate(config)
    await Tortoise.init(config=config)
    client = connections.get("default")
    await client.execute_query(OLDER_REPLICAS_ENDPOINT.format(marks(10)), [
        later_id, "https://93.184.215.14/later", '["*"]', "", secret, user_id, user_id, True,
        now, now])
    endpoints = await client.execute_query_dict(
        "SELECT * FROM webhook_endpoints ORDER BY created_by NULLS FIRST")
    deliveries = await client.execute_query_dict(
        "SELECT event_id, user_id FROM webhook_deliveries ORDER BY event_id")
    # 0007's event log: a new table, empty, whose event ids and positions are unique.
    logged_before = await client.execute_query_dict("SELECT * FROM webhook_event_log")
    rows = [
        ("00000000-0000-0000-0000-0000000000a1", 1, "e-order"),
        ("00000000-0000-0000-0000-0000000000a2", 2, "e-order"),  # the same event id
        ("00000000-0000-0000-0000-0000000000a3", 1, "e-other"),  # the same position
    ]
    duplicate = []
    for row_id, position, event_id in rows:
        try:
            await client.execute_query(LOGGED.format(marks(11)), [
                row_id, position, event_id, "orders.order.created", "order-1", user_id,
                "ORDERS", 1, now, "{}", now])
        except Exception as error:
            duplicate.append(type(error).__name__)
    logged = await client.execute_query_dict(
        "SELECT event_id, user_id FROM webhook_event_log ORDER BY event_id")
    await Tortoise.close_connections()
    print(orjson.dumps({"endpoints": endpoints, "deliveries": deliveries,
        "logged_before": logged_before, "logged": logged, "duplicate": duplicate},
        default=str).decode())

asyncio.run(main(*sys.argv[1:]))
"""


async def _migrated(url: str, endpoint_id: str, user_id: str, later_id: str) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        SCRIPT,
        url,
        endpoint_id,
        user_id,
        later_id,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, errors = await process.communicate()
    assert process.returncode == 0, errors.decode()
    found: dict[str, Any] = orjson.loads(out.splitlines()[-1])
    return found


async def test_endpoints_from_before_have_no_owner_stay_enabled_and_keep_their_secret() -> None:
    endpoint_id, user_id, later_id = (str(uuid.uuid4()) for _ in range(3))
    async with temporary_database("webhooks-migrations") as url:
        found = await _migrated(url, endpoint_id, user_id, later_id)
    endpoint, later = found["endpoints"]
    assert uuid.UUID(str(endpoint["id"])) == uuid.UUID(endpoint_id)
    # Endpoints from before (all admins') and those older replicas register during an upgrade
    # keep receiving every event of their types.
    assert endpoint["audience"] == later["audience"] == "all"
    assert (endpoint["created_by"], endpoint["owner_id"]) == (None, None)
    assert endpoint["enabled"] in (True, 1)
    assert (endpoint["disabled_reason"], endpoint["previous_secret"]) == (None, None)
    assert endpoint["failing_since"] is None  # not failing until its next failed attempt
    # Sealed by the dispatcher's upkeep, not by the migration (test_secrets.py).
    assert endpoint["secret"] == "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    assert found["logged_before"] == []
    assert found["logged"] == [{"event_id": "e-order", "user_id": user_id}]
    # One row per event id, one per position.
    assert found["duplicate"] == ["IntegrityError", "IntegrityError"]
    assert {d["event_id"]: d["user_id"] for d in found["deliveries"]} == {
        "e-user": user_id,
        "e-order": user_id,
        "e-book": None,
    }
