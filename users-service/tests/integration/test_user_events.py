"""Sign-ups, changes and deletions record their events in the outbox, in the same transaction."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx
import jsonschema_rs
import orjson

from api_shared.events.models import OutboxEvent
from api_shared.mail.models import OutboxMail
from api_testkit.asyncapi import message_schema
from users_service.users.events import CATALOG

NewAccount = Any  # the conftest fixture: async (role=..., name=...) -> Account
Account = Any


async def events_of(user_id: str) -> list[dict[str, Any]]:
    rows = await OutboxEvent.filter(subject=user_id).order_by("sequence")
    return [orjson.loads(row.document) for row in rows]


async def reset_token(email: str) -> str:
    """The token of the reset message mailed to ``email`` (the queue is handled beside the
    request: a bounded wait)."""
    for _ in range(100):
        mail = await OutboxMail.filter(recipient=email, subject="Reset your password").first()
        if mail is not None:
            [token] = re.findall(r"token=([\w-]+)", mail.text)
            return str(token)
        await asyncio.sleep(0.05)
    raise AssertionError(f"no reset message to {email}")


async def test_a_sign_up_records_users_user_created_with_the_public_user(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account = await new_account()

    [created] = await events_of(account.id)
    assert created["type"] == "users.user.created"
    assert created["source"] == "/users-service"
    assert created["sequence"] == 1
    assert (
        created["data"]
        == (await client.get(f"/api/users/{account.id}", headers=account.headers)).json()["data"]
    )


async def test_a_deletion_records_users_user_deleted_with_only_the_id(
    client: httpx.AsyncClient, new_account: NewAccount, admin: Account
) -> None:
    account = await new_account()

    response = await client.delete(f"/api/users/{account.id}", headers=admin.headers)

    assert response.status_code == 204
    _, deleted = await events_of(account.id)
    assert (deleted["type"], deleted["sequence"]) == ("users.user.deleted", 2)
    assert deleted["data"] == {"id": account.id}


async def test_deleting_a_user_that_is_gone_records_nothing(
    client: httpx.AsyncClient, new_account: NewAccount, admin: Account
) -> None:
    account = await new_account()
    await client.delete(f"/api/users/{account.id}", headers=admin.headers)

    again = await client.delete(f"/api/users/{account.id}", headers=admin.headers)

    assert again.status_code == 404
    assert [event["type"] for event in await events_of(account.id)] == [
        "users.user.created",
        "users.user.deleted",
    ]


async def test_every_event_a_users_life_records_is_described_by_the_served_asyncapi(
    client: httpx.AsyncClient, new_account: NewAccount, admin: Account
) -> None:
    account = await new_account()
    await client.patch(f"/api/users/{account.id}", json={"name": "Renamed"}, headers=admin.headers)
    # The owner of its (unverified) address takes it back: users.user.claimed.
    await client.post("/api/password-reset-requests", json={"email": account.email})
    reset = await client.post(
        "/api/password-resets",
        json={"token": await reset_token(account.email), "password": "the owner's password"},
    )
    assert reset.status_code == 204, reset.text
    await client.delete(f"/api/users/{account.id}", headers=admin.headers)

    served = await client.get("/docs/asyncapi.json")

    assert served.status_code == 200
    document = served.json()
    events = await events_of(account.id)
    assert {e["type"] for e in events} == set(CATALOG.types)
    for event in events:
        validator = jsonschema_rs.validator_for(message_schema(document, str(event["type"])))
        assert validator.is_valid(event), (event, list(validator.iter_errors(event)))


async def test_a_change_of_role_or_suspension_records_users_user_updated_with_the_user_after_it(
    client: httpx.AsyncClient, new_account: NewAccount, admin: Account
) -> None:
    account = await new_account()

    promoted = await client.patch(
        f"/api/users/{account.id}", json={"role": "admin"}, headers=admin.headers
    )
    suspended = await client.patch(
        f"/api/users/{account.id}", json={"isActive": False}, headers=admin.headers
    )

    assert (promoted.status_code, suspended.status_code) == (200, 200)
    _, first, second = await events_of(account.id)
    assert (first["type"], first["sequence"]) == ("users.user.updated", 2)
    assert first["data"] == promoted.json()["data"]
    assert (second["data"]["role"], second["data"]["isActive"]) == ("admin", False)
    assert second["data"] == suspended.json()["data"]


async def test_a_password_change_alone_records_no_event(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    account = await new_account()

    changed = await client.patch(
        f"/api/users/{account.id}",
        json={"password": "another long password", "currentPassword": account.password},
        headers=account.headers,
    )

    assert changed.status_code == 200
    assert [event["type"] for event in await events_of(account.id)] == ["users.user.created"]
