"""HTTP handlers of the orders API: parse, call the service, shape the response."""

from __future__ import annotations

from collections.abc import Sequence

from sanic import Blueprint, Request
from sanic.response import HTTPResponse, empty
from sanic_ext import openapi
from sanic_ext.extensions.openapi.types import Schema

from api_shared.auth import authenticate
from api_shared.openapi import (
    ETAG,
    JSON,
    LOCATION,
    MERGE_PATCH_JSON,
    ItemEnvelope,
    PageEnvelope,
    bearer_auth,
    error_responses,
    header_parameter,
    json_body,
    page_parameters,
    path_id,
    response,
    string_enum,
)
from api_shared.paging import PageRequest, allowed_sorts, page_body, parse_page
from api_shared.representation import item_body, json_response
from api_shared.validation import read_json_object
from orders_service import idempotency
from orders_service.models import Order, OrderStatus
from orders_service.preconditions import etag
from orders_service.schemas import (
    CREATE_READ_ONLY,
    PATCH_READ_ONLY,
    REPLACE_READ_ONLY,
    OrderCreate,
    OrderPatch,
    OrderPublic,
    OrderReplace,
    parse_order_input,
)
from orders_service.services import (
    DEFAULT_SORT,
    SORTS,
    OrderService,
    list_filters,
    user_list_filters,
)

orders = Blueprint("orders")

REPLAYED_HEADER = "Idempotent-Replayed"

ORDER_ID = path_id("order_id", "The order's id; one that is not a UUID names no order.")
USER_ID = path_id("user_id", "The user's id; one that is not a UUID names no user.")
STATUS_FILTER = {"status": string_enum(OrderStatus)}
IF_MATCH = header_parameter(
    "If-Match",
    Schema(type="string"),
    "Change only if the order's current ETag is listed (or `*`); else 412.",
)
IDEMPOTENCY_KEY = header_parameter(
    idempotency.HEADER,
    Schema(type="string", minLength=1, maxLength=idempotency.MAX_KEY_LENGTH),
    "Repeat with the same key (and body) within 24 h to get the first response again.",
)
CREATED_HEADERS = {
    **LOCATION,
    **ETAG,
    REPLAYED_HEADER: {
        "description": "`true` when this is the stored response of an earlier request.",
        "required": False,
        "schema": {"type": "string", "enum": ["true"]},
    },
}


def _service(request: Request) -> OrderService:
    service: OrderService = request.app.ctx.order_service
    return service


def _query(request: Request) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = request.get_query_args(keep_blank_values=True)
    return pairs


def _order_response(order: Order, status: int = 200) -> HTTPResponse:
    return json_response(
        item_body(OrderPublic.of(order)),
        status=status,
        headers={"ETag": etag(order.id, order.version)},
    )


def _page_response(rows: Sequence[Order], total: int, page: PageRequest) -> HTTPResponse:
    return json_response(page_body([OrderPublic.of(row).wire() for row in rows], total, page))


@orders.get("/orders")
@openapi.definition(
    operation="listOrders",
    tag="orders",
    parameter=page_parameters(
        allowed_sorts(SORTS),
        DEFAULT_SORT,
        {
            **STATUS_FILTER,
            "userId": Schema(
                type="string",
                format="uuid",
                description="Admins only (from a customer: 400 BAD_FILTER).",
            ),
        },
    ),
)
@response(200, PageEnvelope[OrderPublic], "A page of orders")
@error_responses(400)
@bearer_auth()
async def list_orders(request: Request) -> HTTPResponse:
    """The caller's orders (an admin's: everyone's), paged; filters status (admins: userId)."""
    principal = await authenticate(request)
    page = parse_page(
        _query(request), sorts=SORTS, default_sort=DEFAULT_SORT, filters=list_filters(principal)
    )
    rows, total = await _service(request).list_orders(principal, page)
    return _page_response(rows, total, page)


@orders.get("/users/<user_id:str>/orders")
@openapi.definition(
    operation="listUserOrders",
    tag="orders",
    parameter=[USER_ID, *page_parameters(allowed_sorts(SORTS), DEFAULT_SORT, STATUS_FILTER)],
)
@response(200, PageEnvelope[OrderPublic], "A page of the user's orders")
@error_responses(400, 403, 404)
@bearer_auth()
async def list_user_orders(request: Request, user_id: str) -> HTTPResponse:
    """One user's orders, paged: for that user or an admin (404 for an unknown user)."""
    principal = await authenticate(request)
    service = _service(request)
    scope = await service.user_scope(
        principal, user_id, authorization=request.headers.get("authorization", "")
    )
    page = parse_page(
        _query(request), sorts=SORTS, default_sort=DEFAULT_SORT, filters=user_list_filters()
    )
    rows, total = await service.list_orders(principal, page, user_id=scope)
    return _page_response(rows, total, page)


@orders.post("/orders")
@openapi.definition(
    operation="createOrder",
    tag="orders",
    body=json_body(OrderCreate),
    parameter=IDEMPOTENCY_KEY,
)
@response(201, ItemEnvelope[OrderPublic], "The new order", headers=CREATED_HEADERS)
@error_responses(409, 422, body=True)
@bearer_auth()
async def create_order(request: Request) -> HTTPResponse:
    """Create an order; with ``Idempotency-Key`` a repeat returns the first response."""
    principal = await authenticate(request)
    key = idempotency.parse_key(request.headers.get(idempotency.HEADER))
    data = parse_order_input(OrderCreate, read_json_object(request), CREATE_READ_ONLY)
    creation = await _service(request).create(principal, data, idempotency_key=key)
    headers = dict(creation.response.headers)
    if creation.replayed:
        headers[REPLAYED_HEADER] = "true"
    return json_response(creation.response.body, status=creation.response.status, headers=headers)


@orders.get("/orders/<order_id:str>")
@openapi.definition(operation="getOrder", tag="orders", parameter=ORDER_ID)
@response(200, ItemEnvelope[OrderPublic], "The order", headers=ETAG)
@error_responses(403, 404)
@bearer_auth()
async def get_order(request: Request, order_id: str) -> HTTPResponse:
    """One order, with its ETag."""
    principal = await authenticate(request)
    return _order_response(await _service(request).get(principal, order_id))


@orders.put("/orders/<order_id:str>")
@openapi.definition(
    operation="replaceOrder",
    tag="orders",
    parameter=[ORDER_ID, IF_MATCH],
    body=json_body(OrderReplace),
)
@response(200, ItemEnvelope[OrderPublic], "The replaced order", headers=ETAG)
@error_responses(403, 404, 409, 412, 422, body=True)
@bearer_auth()
async def replace_order(request: Request, order_id: str) -> HTTPResponse:
    """Replace items and note (an absent note becomes null); honours ``If-Match``."""
    principal = await authenticate(request)
    data = parse_order_input(OrderReplace, read_json_object(request), REPLACE_READ_ONLY)
    order = await _service(request).replace(
        principal, order_id, data, if_match=request.headers.get("if-match")
    )
    return _order_response(order)


@orders.patch("/orders/<order_id:str>")
@openapi.definition(
    operation="patchOrder",
    tag="orders",
    parameter=[ORDER_ID, IF_MATCH],
    body=json_body(OrderPatch, media_types=(JSON, MERGE_PATCH_JSON)),
)
@response(200, ItemEnvelope[OrderPublic], "The changed order", headers=ETAG)
@error_responses(403, 404, 409, 412, 422, body=True)
@bearer_auth()
async def patch_order(request: Request, order_id: str) -> HTTPResponse:
    """JSON Merge Patch of items, note and status; honours ``If-Match``."""
    principal = await authenticate(request)
    patch = parse_order_input(OrderPatch, read_json_object(request), PATCH_READ_ONLY)
    order = await _service(request).patch(
        principal, order_id, patch, if_match=request.headers.get("if-match")
    )
    return _order_response(order)


@orders.delete("/orders/<order_id:str>")
@openapi.definition(operation="deleteOrder", tag="orders", parameter=[ORDER_ID, IF_MATCH])
@response(204, None, "Deleted")
@error_responses(403, 404, 409, 412)
@bearer_auth()
async def delete_order(request: Request, order_id: str) -> HTTPResponse:
    """Delete an order (204); honours ``If-Match``."""
    principal = await authenticate(request)
    await _service(request).delete(principal, order_id, if_match=request.headers.get("if-match"))
    return empty()
