"""HTTP handlers of the event log (``GET /api/events``, docs/api.md#event-log) and of its
live stream (``GET /api/events/stream``, docs/api.md#event-stream)."""

from __future__ import annotations

from typing import Protocol

from sanic import Blueprint, Request
from sanic.response import HTTPResponse
from sanic_ext import openapi
from sanic_ext.extensions.openapi.definitions import Parameter
from sanic_ext.extensions.openapi.types import Schema

import api_shared.openapi as spec
from api_shared.auth import Principal, Scope
from api_shared.errors import NotFoundError
from api_shared.paging import parse_request_filters, parse_request_page
from api_shared.sse import LAST_EVENT_ID_HEADER, last_event_id
from api_shared.sse import MEDIA_TYPE as SSE_MEDIA_TYPE
from api_shared.standing import CallerConfirmation, confirmed_caller
from webhooks_service.event_log.presenter import event_response, events_page_response
from webhooks_service.event_log.schemas import EventPublic
from webhooks_service.event_log.services import (
    DEFAULT_SORT,
    FILTERS,
    MAX_FILTER_LENGTH,
    SORTS,
    EventLogService,
)
from webhooks_service.event_log.stream import EventStreams

events = Blueprint("events")

EVENT_ID = Parameter(
    "event_id",
    Schema(type="string", minLength=1, maxLength=MAX_FILTER_LENGTH),
    "path",
    description="The event's id (its CloudEvents id); another user's names none.",
    required=True,
)
TEXT_FILTER = Schema(type="string", minLength=1, maxLength=MAX_FILTER_LENGTH)
RESUME_UNKNOWN = (
    "No event of yours has the id Last-Event-ID names (or it is no longer kept): read what "
    "you missed from GET /api/events, then open the stream without Last-Event-ID."
)


class EventLogContext(Protocol):
    """What these handlers read of the app's context (``webhooks_service.context.Context``):
    named here, so that the package never imports the context that composes it."""

    @property
    def standing(self) -> CallerConfirmation: ...

    @property
    def events(self) -> EventLogService: ...

    @property
    def streams(self) -> EventStreams: ...


def _context(request: Request) -> EventLogContext:
    context: EventLogContext = request.app.ctx.context
    return context


async def _caller(request: Request, *, confirm: bool = False) -> tuple[EventLogService, Principal]:
    """The service and the caller: a reader, so a customer's token alone says whose events
    these are; an admin is confirmed with users-service (api_shared.standing), and anyone
    when ``confirm``: a stream reads on for as long as it is open, so a token whose session
    ended must not open one (401)."""
    context = _context(request)
    caller = await confirmed_caller(
        request, context.standing, writes=confirm, scope=Scope.EVENTS_READ
    )
    return context.events, caller


@events.get("/api/events")
@spec.list_operation(
    "listEvents",
    "events",
    EventPublic,
    "A page of events, each as delivered",
    sorts=SORTS,
    default_sort=DEFAULT_SORT,
    filters={"type": TEXT_FILTER, "subject": TEXT_FILTER},
    errors=(403,),
)
async def list_events(request: Request) -> HTTPResponse:
    """The caller's event history, newest first by default: the events about their own
    orders and account (an admin's: every event), filtered by type and subject."""
    service, caller = await _caller(request)
    page = parse_request_page(request, sorts=SORTS, default_sort=DEFAULT_SORT, filters=FILTERS)
    rows, total = await service.list_events(caller, page)
    return events_page_response(rows, total, page)


@events.get("/api/events/stream", ctx_produces=SSE_MEDIA_TYPE)
@openapi.definition(
    operation="streamEvents",
    tag="events",
    parameter=[
        Parameter("type", TEXT_FILTER, "query", description="Only events of this type."),
        Parameter(
            LAST_EVENT_ID_HEADER,
            TEXT_FILTER,
            "header",
            description="Resume after this event (its id): what EventSource sends on reconnect.",
        ),
    ],
)
@spec.response_content(
    200,
    {SSE_MEDIA_TYPE: {"type": "string"}},
    "Server-Sent Events: each event's id, type and CloudEvents document, as it is logged",
)
@spec.error_responses(400, 403, 404, 429, 503)
@spec.bearer_auth()
async def stream_events(request: Request) -> None:
    """The caller's events as they happen (docs/api.md#event-stream), resumed after the
    event ``Last-Event-ID`` names; 404 when that one is not the caller's or no longer kept.
    The caller is confirmed with users-service first (401 for an ended session)."""
    service, caller = await _caller(request, confirm=True)
    event_type = parse_request_filters(request, {"type": FILTERS["type"]}).get("type")
    resume_after = None
    last_id = last_event_id(request)
    if last_id is not None:
        try:
            resume_after = await service.get(caller, last_id)
        except NotFoundError:
            raise NotFoundError(RESUME_UNKNOWN) from None
    await _context(request).streams.serve(request, caller, event_type, resume_after)


@events.get("/api/events/<event_id:str>")
@openapi.definition(operation="getEvent", tag="events", parameter=EVENT_ID)
@spec.response(200, spec.ItemEnvelope[EventPublic], "The event, as delivered")
@spec.error_responses(403, 404)
@spec.bearer_auth()
async def get_event(request: Request, event_id: str) -> HTTPResponse:
    """One event by its id; another user's is 404, like one that does not exist."""
    service, caller = await _caller(request)
    return event_response(await service.get(caller, event_id))
