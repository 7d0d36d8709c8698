"""HTTP handlers of the orders API: parse, call the service, shape the response."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from sanic import Blueprint, Request
from sanic.response import HTTPResponse, empty
from sanic_ext import openapi
from sanic_ext.extensions.openapi.definitions import RequestBody
from sanic_ext.extensions.openapi.types import Schema

import api_shared.openapi as spec
from api_shared.auth import Access, Principal, Scope
from api_shared.output_only import OutputOnly, Reasons, split_output_only
from api_shared.paging import MAX_LIMIT, parse_request_cursor, parse_request_page
from api_shared.representation import InputModel
from api_shared.standing import confirmed_caller
from api_shared.validation import read_json_object
from orders_service import idempotency
from orders_service.context import context_of
from orders_service.events import OrderEvent
from orders_service.models import Order, OrderStatus
from orders_service.preconditions import IF_MATCH_PATTERN, IfMatch, parse_if_match
from orders_service.preconditions import MAX_LENGTH as IF_MATCH_MAX_LENGTH
from orders_service.presenter import (
    REPLAYED_HEADER,
    created_response,
    creation_response,
    history_response,
    order_response,
    page_response,
)
from orders_service.queries import DEFAULT_SORT, SORTS, list_filters, user_list_filters
from orders_service.schemas import (
    CREATE_READ_ONLY,
    PATCH_OUTPUT_ONLY,
    REPLACE_OUTPUT_ONLY,
    OrderCreate,
    OrderPatch,
    OrderPublic,
    OrderReplace,
    parse_order_input,
)

orders = Blueprint("orders")

ORDER_ID = spec.path_id("order_id", "The order's id; one that is not a UUID names no order.")
USER_ID = spec.path_id("user_id", "The user's id; one that is not a UUID names no user.")
STATUS_FILTER = {"status": spec.string_enum(OrderStatus)}
IF_MATCH = spec.header_parameter(
    "If-Match",
    Schema(type="string", maxLength=IF_MATCH_MAX_LENGTH, pattern=IF_MATCH_PATTERN),
    "Change only if the order's current ETag is listed (or `*`); else 412. Only strong "
    "tags can match: a weak one matches nothing (412). A header that is neither `*` nor a "
    "list of entity tags, an empty one included, is malformed, and so is one longer than "
    f"{IF_MATCH_MAX_LENGTH} characters: 400 VALIDATION_FAILED.",
)
IDEMPOTENCY_KEY = spec.header_parameter(
    idempotency.HEADER,
    Schema(type="string", minLength=1, maxLength=idempotency.MAX_KEY_LENGTH),
    "Repeat with the same key (and body) within 24 h to get the first response again.",
)
CREATED_HEADERS = {
    **spec.LOCATION,
    **spec.ETAG,
    REPLAYED_HEADER: {
        "description": "`true` when this is the stored response of an earlier request.",
        "required": False,
        "schema": {"type": "string", "enum": ["true"]},
    },
}

# Who may call each route: an API key needs orders:read to read, orders:write to write; a
# writer is confirmed with users-service (api_shared.standing), and so is any admin.
READ_ORDERS = Access(Scope.ORDERS_READ)
WRITE_ORDERS = Access(Scope.ORDERS_WRITE, confirm=True)

Input = TypeVar("Input", bound=InputModel)
Handler = TypeVar("Handler", bound=Callable[..., Awaitable[HTTPResponse]])
_Input_contra = TypeVar("_Input_contra", bound=InputModel, contravariant=True)


class Change(Protocol[_Input_contra]):
    """``OrderService.replace`` or ``OrderService.patch``."""

    def __call__(
        self,
        principal: Principal,
        order_id: str,
        data: _Input_contra,
        /,
        *,
        if_match: IfMatch | None,
        output_only: OutputOnly,
    ) -> Awaitable[Order]: ...


def _order_change(
    operation: str, description: str, body: RequestBody
) -> Callable[[Handler], Handler]:
    """Document a change of one order by ``body`` (PUT, PATCH): its id, ``If-Match``, the
    changed order with its ETag, and the errors of a change."""
    return spec.change_operation(
        operation,
        "orders",
        OrderPublic,
        description,
        body=body,
        path=[ORDER_ID],
        parameters=[IF_MATCH],
        headers=spec.ETAG,
        errors=(403, 404, 409, 412, 422),
    )


def _if_match(request: Request) -> IfMatch | None:
    """The request's ``If-Match`` (every line of it); 400 when it is malformed."""
    lines: list[str] = request.headers.getall("if-match", [])
    return parse_if_match(lines)


async def _change_order(
    request: Request,
    principal: Principal,
    order_id: str,
    model: type[Input],
    output_only: Reasons,
    change: Change[Input],
) -> HTTPResponse:
    """Read the body as ``model``, change the order for ``principal``, answer the order.

    The order's output-only fields may come along (a GET's body sent back): they are set
    aside here and compared with the order by the service, once it has read it.
    """
    if_match = _if_match(request)
    writable, given = split_output_only(read_json_object(request), output_only)
    data = parse_order_input(model, writable)
    order = await change(principal, order_id, data, if_match=if_match, output_only=given)
    return order_response(order)


@orders.get("/orders")
@spec.list_operation(
    "listOrders",
    "orders",
    OrderPublic,
    "A page of orders",
    sorts=SORTS,
    default_sort=DEFAULT_SORT,
    filters={
        **STATUS_FILTER,
        "userId": Schema(
            type="string",
            format="uuid",
            maxLength=spec.UUID_LENGTH,
            description="Admins only (from a customer: 400 BAD_FILTER).",
        ),
    },
)
async def list_orders(request: Request) -> HTTPResponse:
    """The caller's orders (an admin's: everyone's), paged; filters status (admins: userId)."""
    principal = await confirmed_caller(request, READ_ORDERS)
    page = parse_request_page(
        request, sorts=SORTS, default_sort=DEFAULT_SORT, filters=list_filters(principal)
    )
    rows, total = await context_of(request).orders.list_orders(principal, page)
    return page_response(rows, total, page)


@orders.get("/users/<user_id:str>/orders")
@spec.list_operation(
    "listUserOrders",
    "orders",
    OrderPublic,
    "A page of the user's orders",
    sorts=SORTS,
    default_sort=DEFAULT_SORT,
    filters=STATUS_FILTER,
    path=[USER_ID],
    errors=(403, 404),
)
async def list_user_orders(request: Request, user_id: str) -> HTTPResponse:
    """One user's orders, paged: for that user or an admin (404 for an unknown user)."""
    principal = await confirmed_caller(request, READ_ORDERS)
    service = context_of(request).orders
    scope = await service.user_scope(
        principal, user_id, authorization=request.headers.get("authorization", "")
    )
    page = parse_request_page(
        request, sorts=SORTS, default_sort=DEFAULT_SORT, filters=user_list_filters()
    )
    rows, total = await service.list_orders(principal, page, user_id=scope)
    return page_response(rows, total, page)


@orders.post("/orders")
@openapi.definition(
    operation="createOrder",
    tag="orders",
    body=spec.json_body(OrderCreate),
    parameter=IDEMPOTENCY_KEY,
)
@spec.response(201, spec.ItemEnvelope[OrderPublic], "The new order", headers=CREATED_HEADERS)
@spec.error_responses(409, 422, body=True)
@spec.bearer_auth()
async def create_order(request: Request) -> HTTPResponse:
    """Create an order; with ``Idempotency-Key`` a repeat returns the first response."""
    principal = await confirmed_caller(request, WRITE_ORDERS)
    key = idempotency.parse_key(request.headers.get(idempotency.HEADER))
    data = parse_order_input(OrderCreate, read_json_object(request), CREATE_READ_ONLY)
    creation = await context_of(request).orders.create(
        principal, data, respond=created_response, idempotency_key=key
    )
    return creation_response(creation.response, replayed=creation.replayed)


@orders.get("/orders/<order_id:str>")
@spec.get_operation(
    "getOrder",
    "orders",
    OrderPublic,
    "The order",
    path=[ORDER_ID],
    headers=spec.ETAG,
    errors=(403, 404),
)
async def get_order(request: Request, order_id: str) -> HTTPResponse:
    """One order, with its ETag."""
    principal = await confirmed_caller(request, READ_ORDERS)
    return order_response(await context_of(request).orders.get(principal, order_id))


@orders.get("/orders/<order_id:str>/events")
@openapi.definition(
    operation="listOrderEvents",
    tag="orders",
    parameter=[ORDER_ID, *spec.cursor_parameters(MAX_LIMIT)],
)
@spec.response(
    200,
    spec.CursorEnvelope[OrderEvent],
    "The order's events after `after`, in `sequence` order, each as published",
)
@spec.error_responses(400, 403, 404)
@spec.bearer_auth()
async def list_order_events(request: Request, order_id: str) -> HTTPResponse:
    """The order's events after ``after``, oldest first: a receiver's catch-up after a gap."""
    principal = await confirmed_caller(request, READ_ORDERS)
    service = context_of(request).orders
    # Who may (404, 403) as for GET /orders/{id}, before the parameters (400).
    order = await service.get(principal, order_id)
    cursor = parse_request_cursor(request, default_limit=MAX_LIMIT)
    history = await service.history(order, after=cursor.after, limit=cursor.limit)
    return history_response(history, cursor)


@orders.put("/orders/<order_id:str>")
@_order_change("replaceOrder", "The replaced order", spec.json_body(OrderReplace))
async def replace_order(request: Request, order_id: str) -> HTTPResponse:
    """Replace items and note (an absent note becomes null); honours ``If-Match``."""
    principal = await confirmed_caller(request, WRITE_ORDERS)
    replace = context_of(request).orders.replace
    return await _change_order(
        request, principal, order_id, OrderReplace, REPLACE_OUTPUT_ONLY, replace
    )


@orders.patch("/orders/<order_id:str>")
@_order_change(
    "patchOrder",
    "The changed order",
    spec.json_body(OrderPatch, media_types=(spec.JSON, spec.MERGE_PATCH_JSON)),
)
async def patch_order(request: Request, order_id: str) -> HTTPResponse:
    """JSON Merge Patch of items, note and status; honours ``If-Match``."""
    principal = await confirmed_caller(request, WRITE_ORDERS)
    patch = context_of(request).orders.patch
    return await _change_order(request, principal, order_id, OrderPatch, PATCH_OUTPUT_ONLY, patch)


@orders.delete("/orders/<order_id:str>")
@openapi.definition(operation="deleteOrder", tag="orders", parameter=[ORDER_ID, IF_MATCH])
@spec.response(204, None, "Deleted")
@spec.error_responses(400, 403, 404, 409, 412)
@spec.bearer_auth()
async def delete_order(request: Request, order_id: str) -> HTTPResponse:
    """Delete an order (204); honours ``If-Match``."""
    principal = await confirmed_caller(request, WRITE_ORDERS)
    if_match = _if_match(request)
    await context_of(request).orders.delete(principal, order_id, if_match=if_match)
    return empty()
