"""HTTP handlers of the orders API: parse, call the service, shape the response."""

from __future__ import annotations

from collections.abc import Sequence

from sanic import Blueprint, Request
from sanic.response import HTTPResponse, empty

from api_shared.auth import authenticate
from api_shared.paging import PageRequest, page_body, parse_page
from api_shared.representation import item_body, json_response
from api_shared.validation import read_json_object
from orders_service import idempotency
from orders_service.models import Order
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
async def list_orders(request: Request) -> HTTPResponse:
    """The caller's orders (an admin's: everyone's), paged; filters status (admins: userId)."""
    principal = await authenticate(request)
    page = parse_page(
        _query(request), sorts=SORTS, default_sort=DEFAULT_SORT, filters=list_filters(principal)
    )
    rows, total = await _service(request).list_orders(principal, page)
    return _page_response(rows, total, page)


@orders.get("/users/<user_id:str>/orders")
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
async def get_order(request: Request, order_id: str) -> HTTPResponse:
    """One order, with its ETag."""
    principal = await authenticate(request)
    return _order_response(await _service(request).get(principal, order_id))


@orders.put("/orders/<order_id:str>")
async def replace_order(request: Request, order_id: str) -> HTTPResponse:
    """Replace items and note (an absent note becomes null); honours ``If-Match``."""
    principal = await authenticate(request)
    data = parse_order_input(OrderReplace, read_json_object(request), REPLACE_READ_ONLY)
    order = await _service(request).replace(
        principal, order_id, data, if_match=request.headers.get("if-match")
    )
    return _order_response(order)


@orders.patch("/orders/<order_id:str>")
async def patch_order(request: Request, order_id: str) -> HTTPResponse:
    """JSON Merge Patch of items, note and status; honours ``If-Match``."""
    principal = await authenticate(request)
    patch = parse_order_input(OrderPatch, read_json_object(request), PATCH_READ_ONLY)
    order = await _service(request).patch(
        principal, order_id, patch, if_match=request.headers.get("if-match")
    )
    return _order_response(order)


@orders.delete("/orders/<order_id:str>")
async def delete_order(request: Request, order_id: str) -> HTTPResponse:
    """Delete an order (204); honours ``If-Match``."""
    principal = await authenticate(request)
    await _service(request).delete(principal, order_id, if_match=request.headers.get("if-match"))
    return empty()
