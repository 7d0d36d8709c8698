"""``GET /orders/{id}/events`` as its handler sees a request: who may read an order's history
(an API key needs orders:read), and the order of its checks, on conftest's in-memory stores.

users-service's key routes are not part of the stacks these tests can start, so API keys
are ``FakeStanding``'s here; the integration tests cover the history on real databases.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, cast

import orjson
import pytest
from sanic import Request, Sanic
from sanic.compat import Header
from sanic.response import HTTPResponse

from api_shared.auth.principal import MissingScopeError, Principal, Role, Scope
from api_shared.errors import BadFilterError, ForbiddenError, NotFoundError, ValidationFailedError
from api_testkit.tokens import TestSigner
from api_testkit.upstream_fakes import FakeStanding, FakeUserDirectory
from orders_service.app import create_app
from orders_service.context import wire
from orders_service.models import Order
from orders_service.presenter import created_response
from orders_service.routes import list_order_events as route
from orders_service.schemas import OrderCreate, OrderPatch
from orders_service.services import OrderService
from orders_service.settings import Settings

OWNER = str(uuid.uuid4())
READER_KEY = "ak_live_" + "R" * 43
WRITER_KEY = "ak_live_" + "W" * 43
SIGNER = TestSigner()
# The handler itself (Blueprint.get's typing hides that it returns the function it was given).
list_order_events = cast(Callable[[Request, str], Awaitable[HTTPResponse]], route)


def key_of(owner: str, *scopes: Scope) -> Principal:
    return Principal(owner, Role.CUSTOMER, api_key_id=str(uuid.uuid4()), scopes=frozenset(scopes))


@pytest.fixture
def service(
    orders: Any, records: Any, uow: Any, event_log: Any, catalog: Any, users: Any, clock: Any
) -> OrderService:
    return OrderService(orders, records, uow, event_log, catalog, users, clock)


@pytest.fixture
def app(service: OrderService, catalog: Any) -> Sanic[Any, Any]:
    """The app over the in-memory service; users-service's word on keys from a fake."""
    Sanic.test_mode = True
    settings = Settings()
    keys = {
        READER_KEY: key_of(OWNER, Scope.ORDERS_READ),
        WRITER_KEY: key_of(OWNER, Scope.ORDERS_WRITE),
    }
    context = wire(
        settings,
        verifier=SIGNER.verifier(),
        catalog=catalog,
        users=FakeUserDirectory(),
        standing=FakeStanding(keys),
    )
    context = dataclasses.replace(context, orders=service)
    app: Sanic[Any, Any] = create_app(settings, context=context)
    return app


@pytest.fixture
async def order(service: OrderService) -> Order:
    """``OWNER``'s order: created, confirmed, then cancelled (three events)."""
    owner, admin = Principal(OWNER, Role.CUSTOMER), Principal(str(uuid.uuid4()), Role.ADMIN)
    body = OrderCreate.model_validate({"items": [{"bookId": "book-1", "quantity": 1}]})
    created = await service.create(owner, body, respond=created_response)
    order_id = created.response.body["data"]["id"]
    for status in ("confirmed", "cancelled"):
        patch = OrderPatch.model_validate({"status": status})
        await service.patch(admin, order_id, patch, if_match=None)
    found = await service.orders.get(uuid.UUID(order_id))
    assert found is not None
    return found


async def history(
    app: Sanic[Any, Any], order_id: object, credential: str, query: str = ""
) -> dict[str, Any]:
    """The handler's answer to ``GET /orders/{order_id}/events?{query}``, as JSON."""
    target = f"/orders/{order_id}/events?{query}".encode()
    headers = Header([("authorization", f"Bearer {credential}")])
    request = Request(target, headers, "1.1", "GET", None, app)  # type: ignore[arg-type]
    response = await list_order_events(request, str(order_id))
    assert response.status == 200
    assert response.body is not None
    body: dict[str, Any] = orjson.loads(response.body)
    return body


def token(subject: str, role: Role = Role.CUSTOMER) -> str:
    return SIGNER.token(subject, role=role)


async def test_a_key_with_orders_read_reads_its_owners_history(
    app: Sanic[Any, Any], order: Order
) -> None:
    body = await history(app, order.id, READER_KEY, "after=1")

    assert [e["type"] for e in body["data"]] == ["orders.order.confirmed", "orders.order.cancelled"]
    assert [e["sequence"] for e in body["data"]] == [2, 3]
    assert body["page"] == {"after": 1, "limit": 100, "next": 3, "hasMore": False}


async def test_a_key_without_orders_read_is_refused_naming_the_scope(
    app: Sanic[Any, Any], order: Order
) -> None:
    with pytest.raises(MissingScopeError) as caught:
        await history(app, order.id, WRITER_KEY)

    assert caught.value.status == 403
    assert "orders:read" in caught.value.message


async def test_the_owner_and_an_admin_read_it_and_another_customer_is_refused(
    app: Sanic[Any, Any], order: Order
) -> None:
    mine = await history(app, order.id, token(OWNER), "limit=2")
    admins = await history(app, order.id, token(str(uuid.uuid4()), Role.ADMIN))

    assert [e["sequence"] for e in mine["data"]] == [1, 2]
    assert mine["page"] == {"after": 0, "limit": 2, "next": 2, "hasMore": True}
    assert [e["sequence"] for e in admins["data"]] == [1, 2, 3]
    with pytest.raises(ForbiddenError):
        await history(app, order.id, token(str(uuid.uuid4())))


async def test_who_may_is_answered_before_the_parameters_are_read(
    app: Sanic[Any, Any], order: Order
) -> None:
    with pytest.raises(ForbiddenError):
        await history(app, order.id, token(str(uuid.uuid4())), "after=-1")
    with pytest.raises(NotFoundError):
        await history(app, uuid.uuid4(), token(OWNER), "after=x")
    with pytest.raises(NotFoundError):
        await history(app, "not-a-uuid", token(OWNER))


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("after=-1", ValidationFailedError),
        ("after=two", ValidationFailedError),
        ("after=1&after=2", ValidationFailedError),
        ("offset=1", BadFilterError),
        ("type=orders.order.created", BadFilterError),
    ],
)
async def test_a_bad_parameter_is_refused(
    app: Sanic[Any, Any], order: Order, query: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        await history(app, order.id, token(OWNER), query)
