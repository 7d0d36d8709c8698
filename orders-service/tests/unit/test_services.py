"""The rules of orders: ownership, transitions, If-Match and lost races, on in-memory stores
(conftest's fakes): no HTTP, no database."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import orjson
import pytest

from api_shared.auth.principal import Principal, Role
from api_shared.errors import (
    ConflictError,
    ForbiddenError,
    IdempotencyInProgressError,
    InvalidStateError,
    NotFoundError,
    PreconditionFailedError,
    UnauthenticatedError,
    UnknownBookError,
)
from api_shared.paging import parse_page
from orders_service.models import Order, OrderStatus
from orders_service.ports import StoredResponse
from orders_service.preconditions import IfMatch, etag, parse_if_match
from orders_service.presenter import created_response
from orders_service.queries import DEFAULT_SORT, SORTS, list_filters
from orders_service.schemas import OrderCreate, OrderPatch, OrderReplace
from orders_service.services import MAX_WRITE_ATTEMPTS, OrderService

ITEMS = [{"bookId": "book-1", "quantity": 2}]


@pytest.fixture
def service(
    orders: Any, records: Any, uow: Any, event_log: Any, catalog: Any, users: Any, clock: Any
) -> OrderService:
    """The service over conftest's stores, the catalog of books 1-3 and an empty directory."""
    return OrderService(orders, records, uow, event_log, catalog, users, clock)


def a_customer() -> Principal:
    return Principal(subject=str(uuid.uuid4()), role=Role.CUSTOMER)


def an_admin() -> Principal:
    return Principal(subject=str(uuid.uuid4()), role=Role.ADMIN)


def create(**body: Any) -> OrderCreate:
    return OrderCreate.model_validate({"items": ITEMS, **body})


async def an_order(service: OrderService, owner: Principal, **body: Any) -> Order:
    """An order of ``owner``, created through the service."""
    creation = await service.create(owner, create(**body), respond=created_response)
    order = await service.orders.get(uuid.UUID(creation.response.body["data"]["id"]))
    assert order is not None
    return order


async def patched(service: OrderService, principal: Principal, order: Order, **body: Any) -> Order:
    """``order`` patched by ``principal`` with ``body`` (and ``if_match``, if given)."""
    if_match = body.pop("if_match", None)
    data = OrderPatch.model_validate(body)
    return await service.patch(principal, str(order.id), data, if_match=condition(if_match))


def condition(if_match: str | None) -> IfMatch | None:
    """The parsed ``If-Match`` header ``if_match`` (None: no header)."""
    return None if if_match is None else parse_if_match([if_match])


@pytest.fixture
def owner() -> Principal:
    return a_customer()


@pytest.fixture
async def order(service: OrderService, owner: Principal) -> Order:
    """A pending order of ``owner``, at version 1."""
    return await an_order(service, owner)


def tag(order: Order) -> str:
    return etag(order.id, order.version)


# --- ownership --------------------------------------------------------------------------------


async def test_a_customer_sees_their_own_order_and_is_refused_anyone_elses(
    service: OrderService, owner: Principal, order: Order
) -> None:
    other = a_customer()

    seen = await service.get(owner, str(order.id))

    assert seen.id == order.id
    with pytest.raises(ForbiddenError):
        await service.get(other, str(order.id))
    with pytest.raises(ForbiddenError):
        await patched(service, other, order, note="mine now")
    with pytest.raises(ForbiddenError):
        await service.delete(other, str(order.id), if_match=None)
    assert (await service.get(owner, str(order.id))).version == 1


async def test_an_admin_sees_and_changes_anyones_order(service: OrderService, order: Order) -> None:
    changed = await patched(service, an_admin(), order, note="checked")

    assert changed.note == "checked"
    assert changed.version == 2


@pytest.mark.parametrize("order_id", [str(uuid.uuid4()), "not-a-uuid", ""])
async def test_an_absent_or_malformed_order_id_names_no_order(
    service: OrderService, order_id: str
) -> None:
    with pytest.raises(NotFoundError):
        await service.get(an_admin(), order_id)


async def test_a_token_whose_subject_is_not_a_user_id_is_refused(service: OrderService) -> None:
    with pytest.raises(UnauthenticatedError):
        await service.create(
            Principal(subject="robot", role=Role.CUSTOMER), create(), respond=created_response
        )


async def test_a_customers_list_holds_only_their_orders_and_an_admins_everyones(
    service: OrderService,
) -> None:
    owner, other, admin = a_customer(), a_customer(), an_admin()
    mine = {(await an_order(service, owner)).id for _ in range(2)}
    await an_order(service, other)

    own, own_total = await service.list_orders(owner, _page(owner))
    everyone, all_total = await service.list_orders(admin, _page(admin))

    assert {order.id for order in own} == mine
    assert own_total == 2
    assert all_total == 3
    assert len(everyone) == 3


async def test_a_customer_may_list_only_their_own_user_and_nobody_is_looked_up(
    service: OrderService, users: Any
) -> None:
    customer = a_customer()

    scope = await service.user_scope(customer, customer.subject, authorization="Bearer own")

    assert scope == uuid.UUID(customer.subject)
    with pytest.raises(ForbiddenError):
        await service.user_scope(customer, str(uuid.uuid4()), authorization="Bearer own")
    assert users.calls == []


async def test_an_admin_naming_a_user_the_directory_does_not_know_gets_not_found(
    service: OrderService, users: Any
) -> None:
    known = uuid.uuid4()
    users.users.add(known)

    assert await service.user_scope(an_admin(), str(known), authorization="Bearer a") == known
    with pytest.raises(NotFoundError):
        await service.user_scope(an_admin(), str(uuid.uuid4()), authorization="Bearer a")
    with pytest.raises(NotFoundError):
        await service.user_scope(an_admin(), "not-a-uuid", authorization="Bearer a")
    assert [authorization for _, authorization in users.calls] == ["Bearer a", "Bearer a"]


# --- transitions ------------------------------------------------------------------------------


async def test_a_customer_may_cancel_a_pending_order_but_not_confirm_it(
    service: OrderService, orders: Any, owner: Principal, order: Order
) -> None:
    with pytest.raises(InvalidStateError, match="by a customer"):
        await patched(service, owner, order, status="confirmed")
    cancelled = await patched(service, owner, order, status="cancelled")

    assert cancelled.status == OrderStatus.CANCELLED
    assert orders.rows[order.id].version == 2  # the refused change wrote nothing


async def test_an_admin_moves_an_order_along_every_edge_to_delivered(
    service: OrderService, order: Order
) -> None:
    admin = an_admin()

    for status in ("confirmed", "shipped", "delivered"):
        order = await patched(service, admin, order, status=status)

    assert order.status == OrderStatus.DELIVERED
    assert order.version == 4
    with pytest.raises(InvalidStateError):
        await patched(service, admin, order, status="cancelled")


async def test_items_and_note_are_frozen_for_a_customer_once_the_order_is_confirmed(
    service: OrderService, orders: Any, owner: Principal, order: Order
) -> None:
    admin = an_admin()
    await patched(service, admin, order, status="confirmed")

    with pytest.raises(InvalidStateError):
        await service.replace(
            owner,
            str(order.id),
            OrderReplace.model_validate({"items": ITEMS, "note": "n"}),
            if_match=None,
        )
    edited = await patched(service, admin, order, note="admin's")

    assert edited.note == "admin's"
    assert orders.rows[order.id].version == 3


async def test_a_customer_may_delete_a_pending_order_but_not_a_shipped_one(
    service: OrderService, orders: Any
) -> None:
    owner, admin = a_customer(), an_admin()
    pending, shipped = await an_order(service, owner), await an_order(service, owner)
    for status in ("confirmed", "shipped"):
        await patched(service, admin, shipped, status=status)

    await service.delete(owner, str(pending.id), if_match=None)
    with pytest.raises(InvalidStateError):
        await service.delete(owner, str(shipped.id), if_match=None)

    assert set(orders.rows) == {shipped.id}


async def test_a_change_that_changes_nothing_writes_nothing(
    service: OrderService, orders: Any
) -> None:
    owner = a_customer()
    order = await an_order(service, owner, note="same")

    unchanged = await patched(service, owner, order, note="same")

    assert unchanged.version == 1
    assert orders.write_attempts == 1  # the creation only


async def test_new_items_naming_unknown_books_are_refused_by_field(
    service: OrderService, orders: Any, owner: Principal, order: Order
) -> None:
    items = [{"bookId": "book-2", "quantity": 1}, {"bookId": "nope", "quantity": 1}]

    with pytest.raises(UnknownBookError) as refused:
        await patched(service, owner, order, items=items)

    assert refused.value.fields == {"items.1.bookId": "is not in the catalog"}
    assert orders.rows[order.id].version == 1


# --- If-Match ---------------------------------------------------------------------------------


async def test_a_change_with_the_current_etag_is_made_and_a_stale_one_is_refused(
    service: OrderService, orders: Any, owner: Principal, order: Order
) -> None:
    first_tag = tag(order)

    changed = await patched(service, owner, order, note="one", if_match=first_tag)
    with pytest.raises(PreconditionFailedError):
        await patched(service, owner, order, note="two", if_match=first_tag)
    with pytest.raises(PreconditionFailedError):
        await service.delete(owner, str(order.id), if_match=condition(first_tag))

    assert changed.version == 2
    assert orders.rows[order.id].note == "one"


async def test_if_match_star_or_a_list_naming_the_current_etag_allows_the_change(
    service: OrderService, orders: Any, owner: Principal, order: Order
) -> None:
    await patched(service, owner, order, note="a", if_match="*")
    listed = condition(f'"other", {tag(orders.rows[order.id])}')
    await service.delete(owner, str(order.id), if_match=listed)

    assert orders.rows == {}


async def test_a_weak_if_match_never_matches(
    service: OrderService, owner: Principal, order: Order
) -> None:
    with pytest.raises(PreconditionFailedError):
        await patched(service, owner, order, note="x", if_match=f"W/{tag(order)}")


# --- conditional writes and lost races --------------------------------------------------------


async def test_a_change_that_loses_a_race_is_applied_again_to_the_newer_order(
    service: OrderService, orders: Any
) -> None:
    owner, admin = a_customer(), an_admin()
    order = await an_order(service, owner, note="before")
    orders.rivals = [{"note": "rival's"}]  # written between our read and our write

    confirmed = await patched(service, admin, order, status="confirmed")

    assert confirmed.status == OrderStatus.CONFIRMED
    assert confirmed.note == "rival's"  # the rival's change is kept, not overwritten
    assert confirmed.version == 3
    assert orders.write_attempts == 3  # creation, the lost round, the won one


async def test_a_change_with_if_match_that_loses_a_race_is_refused_on_the_re_read(
    service: OrderService, orders: Any, owner: Principal, order: Order
) -> None:
    orders.rivals = [{"note": "rival's"}]

    with pytest.raises(PreconditionFailedError):
        await patched(service, owner, order, note="mine", if_match=tag(order))

    assert orders.rows[order.id].note == "rival's"


async def test_a_lost_race_is_judged_again_by_the_rules_on_the_newer_order(
    service: OrderService, orders: Any, owner: Principal, order: Order
) -> None:
    """A rival that confirms the order meanwhile makes the customer's edit invalid."""
    orders.rivals = [{"status": OrderStatus.CONFIRMED}]

    with pytest.raises(InvalidStateError):
        await patched(service, owner, order, note="late")

    assert orders.rows[order.id].note is None
    assert orders.rows[order.id].status == OrderStatus.CONFIRMED


async def test_the_books_of_a_change_are_checked_once_however_many_rounds_it_loses(
    service: OrderService, orders: Any, catalog: Any, owner: Principal, order: Order
) -> None:
    catalog.calls.clear()
    orders.rivals = [{"note": f"rival {n}"} for n in range(3)]
    items = [{"bookId": "book-3", "quantity": 1}]

    changed = await patched(service, owner, order, items=items)

    assert changed.items == [{"book_id": "book-3", "quantity": 1}]
    assert catalog.calls == [["book-3"]]


async def test_a_writer_that_loses_every_round_gives_up_with_a_conflict(
    service: OrderService, orders: Any, owner: Principal, order: Order
) -> None:
    orders.rivals = [{"note": f"rival {n}"} for n in range(MAX_WRITE_ATTEMPTS)]

    with pytest.raises(ConflictError):
        await patched(service, owner, order, note="never")

    assert orders.write_attempts == 1 + MAX_WRITE_ATTEMPTS
    assert orders.rows[order.id].version == 1 + MAX_WRITE_ATTEMPTS  # every rival's write stands


async def test_a_delete_that_loses_a_race_deletes_the_newer_order(
    service: OrderService, orders: Any, owner: Principal, order: Order
) -> None:
    orders.rivals = [{"note": "rival's"}]

    await service.delete(owner, str(order.id), if_match=None)

    assert orders.rows == {}


# --- creation, exactly once -------------------------------------------------------------------


async def test_every_order_change_is_one_unit_of_work(
    service: OrderService, uow: Any, owner: Principal, order: Order
) -> None:
    """The fake stores refuse writes outside a transaction; here, every change made one."""
    await patched(service, owner, order, note="n")
    await service.delete(owner, str(order.id), if_match=None)

    assert (uow.committed, uow.rolled_back) == (3, 0)


async def test_a_keyed_repeat_gets_the_first_answer_byte_for_byte_and_creates_nothing(
    service: OrderService, orders: Any
) -> None:
    owner = a_customer()
    answers: list[Order] = []

    def respond(order: Order) -> StoredResponse:
        answers.append(order)
        return created_response(order)

    first = await service.create(owner, create(note="once"), respond=respond, idempotency_key="k")
    again = await service.create(owner, create(note="once"), respond=respond, idempotency_key="k")

    assert (first.replayed, again.replayed) == (False, True)
    assert orjson.dumps(again.response.body) == orjson.dumps(first.response.body)
    assert again.response.headers == first.response.headers
    assert again.response.status == 201
    assert len(answers) == 1
    assert len(orders.rows) == 1


async def test_a_failed_keyed_creation_frees_its_key_and_stores_nothing(
    service: OrderService, orders: Any, records: Any
) -> None:
    owner = a_customer()

    with pytest.raises(UnknownBookError):
        await service.create(
            owner,
            create(items=[{"bookId": "nope", "quantity": 1}]),
            respond=created_response,
            idempotency_key="k",
        )
    retried = await service.create(owner, create(), respond=created_response, idempotency_key="k")

    assert retried.replayed is False
    assert len(orders.rows) == 1
    assert len(records.rows) == 1


async def test_a_claimant_that_lost_its_key_meanwhile_rolls_its_order_back(
    service: OrderService, orders: Any, records: Any, catalog: Any
) -> None:
    """Another request took the key over while this one waited on the catalog."""
    owner = a_customer()
    release = catalog.hold()
    creating = asyncio.create_task(
        service.create(owner, create(), respond=created_response, idempotency_key="k")
    )
    await catalog.entered.wait()
    (record,) = records.rows.values()
    record.claim_token = uuid.uuid4()
    release.set()

    with pytest.raises(IdempotencyInProgressError):
        await creating

    assert orders.rows == {}


def _page(principal: Principal) -> Any:
    return parse_page([], sorts=SORTS, default_sort=DEFAULT_SORT, filters=list_filters(principal))


# --- events -----------------------------------------------------------------------------------


async def test_each_change_records_its_event_in_its_unit_of_work(
    service: OrderService, owner: Principal, order: Order, event_log: Any
) -> None:
    admin = an_admin()
    order = await patched(service, admin, order, status="confirmed")
    order = await patched(service, admin, order, note="fragile")
    await service.replace(
        admin, str(order.id), OrderReplace.model_validate({"items": ITEMS}), if_match=None
    )
    await service.delete(admin, str(order.id), if_match=None)

    # FakeEventLog fails any record made outside a unit of work.
    assert event_log.rows == [
        ("created", order.id),
        ("confirmed", order.id),
        ("patched", order.id),
        ("replaced", order.id),
        ("deleted", order.id),
    ]


async def test_a_change_that_is_refused_or_changes_nothing_records_no_event(
    service: OrderService, owner: Principal, order: Order, event_log: Any
) -> None:
    with pytest.raises(InvalidStateError):
        await patched(service, owner, order, status="shipped")
    await patched(service, owner, order, note=order.note)

    assert [change for change, _ in event_log.rows] == ["created"]


async def test_a_change_lost_to_a_rival_records_only_the_winning_write(
    service: OrderService, owner: Principal, order: Order, orders: Any, event_log: Any
) -> None:
    orders.rivals = [{"note": "rival's"}]  # written between our read and our write

    await patched(service, owner, order, note="mine")

    assert [change for change, _ in event_log.rows] == ["created", "patched"]


async def test_a_deleted_users_orders_are_all_deleted_once_each_with_its_event(
    service: OrderService, owner: Principal, orders: Any, event_log: Any
) -> None:
    mine = [await an_order(service, owner) for _ in range(3)]
    kept = await an_order(service, a_customer())
    user_id = uuid.UUID(owner.subject)

    first = await service.forget_user(user_id)
    again = await service.forget_user(user_id)

    assert (first.deleted, first.anonymised, again.deleted, again.anonymised) == (3, 0, 0, 0)
    assert await orders.of_user(user_id) == []
    assert await orders.get(kept.id) is not None
    deletions = [order_id for change, order_id in event_log.rows if change == "deleted"]
    assert sorted(deletions) == sorted(o.id for o in mine)


async def test_a_deleted_users_orders_past_pending_are_kept_as_records_without_their_note(
    service: OrderService, owner: Principal, orders: Any, event_log: Any
) -> None:
    """What DELETE /orders/{id} refuses a customer (409), their account's deletion must not do:
    confirmed, shipped and delivered orders stay, anonymised."""
    admin = an_admin()
    pending = await an_order(service, owner, note="ring the bell")
    cancelled = await patched(service, owner, await an_order(service, owner), status="cancelled")
    confirmed = await patched(
        service, admin, await an_order(service, owner, note="for Ada"), status="confirmed"
    )
    shipped = await patched(
        service, admin, await an_order(service, owner, note="to 1 Main St"), status="confirmed"
    )
    delivered = await patched(service, admin, await an_order(service, owner), status="confirmed")
    delivered = await patched(service, admin, delivered, status="shipped")
    delivered = await patched(service, admin, delivered, status="delivered")  # no note
    shipped = await patched(service, admin, shipped, status="shipped")
    user_id = uuid.UUID(owner.subject)
    event_log.rows.clear()

    first = await service.forget_user(user_id)
    again = await service.forget_user(user_id)

    assert (first.deleted, first.anonymised) == (2, 2)
    assert (again.deleted, again.anonymised) == (0, 0)
    left = {order.id: order for order in await orders.of_user(user_id)}
    assert set(left) == {confirmed.id, shipped.id, delivered.id}
    assert [left[o.id].status for o in (confirmed, shipped)] == ["confirmed", "shipped"]
    assert all(order.note is None for order in left.values())
    assert left[shipped.id].items == shipped.items
    assert sorted(event_log.rows) == sorted(
        [("deleted", pending.id), ("deleted", cancelled.id),
         ("patched", confirmed.id), ("patched", shipped.id)]
    )  # fmt: skip
