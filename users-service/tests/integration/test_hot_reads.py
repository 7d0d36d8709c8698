"""The users page's fast reads against the ORM's own, on the test database (PostgreSQL with
TEST_DATABASE_URL, else SQLite): the same rows, the same wire form, the same caller, and
the narrow caller check refusing whom the full one refuses.

The page is read as values on SQL built once per shape (api_shared.statements), written by
an encoder derived from UserPublic (api_shared.representation.WireEncoder), and its three
reads share one pooled connection (api_shared.transactions.one_connection). Each must give
what Tortoise's querysets and pydantic's model give, which these tests compare.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import asyncpg
import httpx
import jwt
import orjson
import pytest
from tortoise import connections

from api_shared.auth import Role
from api_shared.representation import WireEncoder, json_response
from api_shared.statements import Statements
from api_shared.transactions import one_connection
from users_service.models import Session, User
from users_service.sessions.ports import Standing
from users_service.sessions.repository import SessionRepository
from users_service.users.repository import (
    DEFERRED_JOIN_MIN_OFFSET,
    PUBLIC_FIELDS,
    UserRepository,
    page_query,
)
from users_service.users.schemas import UserPublic

NewAccount = Any  # the conftest fixture: async (role=..., name=...) -> Account
Account = Any

SHAPES = [
    {"role": None, "is_active": None, "order_by": "created_at", "offset": 0},
    {"role": None, "is_active": None, "order_by": "-name", "offset": 3},
    {"role": Role.CUSTOMER, "is_active": None, "order_by": "-created_at", "offset": 1},
    {"role": None, "is_active": False, "order_by": "name", "offset": 0},
    {"role": Role.ADMIN, "is_active": True, "order_by": "created_at", "offset": 0},
    {"role": None, "is_active": None, "order_by": "name", "offset": DEFERRED_JOIN_MIN_OFFSET},
]


@pytest.fixture
async def population(client: httpx.AsyncClient, new_account: NewAccount, admin: Account) -> None:
    """Enough users for every shape to have rows, the deferred join's included; one suspended."""
    have = await User.all().count()
    users = UserRepository()  # which keeps user_counts, the page's total, in step
    for number in range(max(0, DEFERRED_JOIN_MIN_OFFSET + 5 - have)):
        email = f"reader-{uuid.uuid4().hex}@example.com"
        await users.add(
            name=f"Reader {number}", email=email, password_hash=None, role=Role.CUSTOMER
        )
    suspended = await new_account(name="Suspended Reader")
    response = await client.patch(
        f"/api/users/{suspended.id}", json={"isActive": False}, headers=admin.headers
    )
    assert response.status_code == 200, response.text


def _session_of(token: str) -> uuid.UUID:
    """The session id an access token carries (its ``sid``)."""
    return uuid.UUID(jwt.decode(token, options={"verify_signature": False})["sid"])


@pytest.mark.parametrize("shape", SHAPES, ids=lambda shape: "-".join(map(str, shape.values())))
async def test_a_page_reads_the_rows_the_orm_reads(population: None, shape: dict[str, Any]) -> None:
    rows, total = await UserRepository().page(**shape, limit=7)
    models = await page_query(**shape, limit=7)
    async with one_connection():  # the route's way: asyncpg itself on PostgreSQL
        assert await UserRepository().page(**shape, limit=7) == (rows, total)

    assert rows, "every shape has rows here"
    assert [row["id"] for row in rows] == [user.id for user in models]
    for row, user in zip(rows, models, strict=True):
        assert set(row.keys()) == set(PUBLIC_FIELDS)
        assert {field: row[field] for field in PUBLIC_FIELDS} == {
            field: getattr(user, field) for field in PUBLIC_FIELDS
        }
    filters = {key: shape[key] for key in ("role", "is_active") if shape[key] is not None}
    assert total == await User.filter(**filters).count()


async def test_the_wire_form_of_a_row_is_the_models(population: None) -> None:
    encode = WireEncoder(UserPublic)
    rows, _ = await UserRepository().page(
        role=None, is_active=None, order_by="created_at", limit=100, offset=0
    )
    users = {user.id: user for user in await User.filter(id__in=[row["id"] for row in rows])}

    for row in rows:
        body = json_response(encode(row)).body
        assert body is not None
        written = orjson.loads(body)
        assert written == UserPublic.model_validate(users[row["id"]]).wire()
    async with one_connection():  # the route's rows: asyncpg's records on PostgreSQL
        pinned, _ = await UserRepository().page(
            role=None, is_active=None, order_by="created_at", limit=100, offset=0
        )
    assert encode.rows(pinned) == [encode(row) for row in rows]


async def test_a_shape_whose_parameters_come_out_otherwise_is_refused(population: None) -> None:
    # Tortoise puts the filter's value before the limit: listed the other way round, the
    # cached SQL would bind them to the wrong placeholders.
    with pytest.raises(RuntimeError, match="takes"):
        await Statements().values(
            User, "misordered", [5, "Reader 1"], lambda: User.filter(name="Reader 1").limit(5)
        )


async def test_the_caller_check_reads_the_session_and_user_the_orm_reads(
    new_account: NewAccount,
) -> None:
    account = await new_account(name="Caller")
    session_id = _session_of(account.token)

    found = await SessionRepository().with_user(session_id)
    expected = await Session.filter(id=session_id).select_related("user").first()

    assert found is not None
    assert expected is not None
    session, user = found
    for field in Session._meta.db_fields:
        assert getattr(session, field) == getattr(expected, field), field
    for field in User._meta.db_fields:
        assert getattr(user, field) == getattr(expected.user, field), field
    assert user._saved_in_db
    assert session._saved_in_db
    assert await SessionRepository().with_user(uuid.uuid4()) is None


async def test_the_narrow_caller_check_reads_the_orms_session_and_user(
    new_account: NewAccount,
) -> None:
    account = await new_account(role="admin", name="Narrow")
    session = await Session.get(id=_session_of(account.token)).prefetch_related("user")

    standing = await SessionRepository().standing(session.id)

    assert standing == Standing.of(session, session.user)
    assert standing is not None
    assert standing.role is Role.ADMIN
    assert standing.is_active is True
    assert standing.expires_at.tzinfo is not None
    assert await SessionRepository().standing(uuid.uuid4()) is None


async def test_the_users_list_refuses_an_ended_session_or_a_suspended_admin(
    client: httpx.AsyncClient, new_account: NewAccount
) -> None:
    ended, suspended, live = [await new_account(role="admin") for _ in range(3)]
    customer = await new_account()
    # Written behind the service's back, which would end the sessions with the suspension:
    # the check itself must refuse a suspended account whose session is still open.
    await Session.filter(id=_session_of(ended.token)).update(revoked_at=datetime.now(UTC))
    await User.filter(id=suspended.id).update(is_active=False)

    answers = {
        who: await client.get("/api/users?limit=1", headers=account.headers)
        for who, account in (
            ("ended", ended), ("suspended", suspended), ("customer", customer), ("live", live)
        )
    }  # fmt: skip

    assert answers["ended"].status_code == 401
    assert answers["suspended"].status_code == 403
    assert "suspended" in answers["suspended"].json()["error"]["message"]
    assert answers["customer"].status_code == 403
    assert answers["live"].status_code == 200, answers["live"].text


async def test_one_connection_serves_the_blocks_reads_outside_a_transaction(
    population: None,
) -> None:
    client: Any = connections.get("default")
    if client.capabilities.dialect != "postgres":
        async with one_connection():
            assert connections.get("default") is client  # SQLite: one connection already
        return
    async with one_connection():
        pinned: Any = connections.get("default")
        pids = [await pinned.execute_query_dict("SELECT pg_backend_pid() AS pid") for _ in "abc"]
        assert pinned is not client
        assert len({row[0]["pid"] for row in pids}) == 1
        await User.filter(name="Reader 0").update(name="Reader 0")
        assert not pinned._connection.is_in_transaction()  # each statement committed
    assert connections.get("default") is client
    assert client._pool.get_idle_size() == client._pool.get_size()


async def test_a_connection_given_back_mid_transaction_is_rolled_back(population: None) -> None:
    """The pool skips asyncpg's reset query (api_shared.database): a transaction left open
    must still end before the connection is lent again."""
    client: Any = connections.get("default")
    if client.capabilities.dialect != "postgres":
        assert not hasattr(client, "_pool")  # SQLite: no pool, nothing lent
        return
    connection = await client._pool.acquire()
    await connection.execute("BEGIN")
    pid = await connection.fetchval("SELECT pg_backend_pid()")
    await client._pool.release(connection)

    observer = await asyncpg.connect(
        host=client.host, port=client.port, user=client.user, database=client.database
    )
    try:
        state = await observer.fetchval("SELECT state FROM pg_stat_activity WHERE pid = $1", pid)
    finally:
        await observer.close()
    assert state == "idle"  # not "idle in transaction"
