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
from api_shared.auth import Access, Scope
from api_shared.errors import NotFoundError
from api_shared.paging import parse_request_filters, parse_request_page
from api_shared.sse import LAST_EVENT_ID_HEADER, last_event_id
from api_shared.sse import MEDIA_TYPE as SSE_MEDIA_TYPE
from api_shared.standing import Confirming, confirmed_caller
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


# Who may call each route: an API key needs events:read. A reader's token alone says whose
# events these are (an admin is confirmed with users-service, api_shared.standing); a stream
# reads on for as long as it is open, so every caller is confirmed first: a token whose
# session ended must not open one (401).
READ_EVENTS = Access(Scope.EVENTS_READ)
STREAM_EVENTS = Access(Scope.EVENTS_READ, confirm=True)


class EventLogContext(Confirming, Protocol):
    """What these handlers read of the app's context (``webhooks_service.context.Context``):
    named here, so that the package never imports the context that composes it."""

    @property
    def events(self) -> EventLogService: ...

    @property
    def streams(self) -> EventStreams: ...


def _context(request: Request) -> EventLogContext:
    context: EventLogContext = request.app.ctx.context
    return context


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
    caller = await confirmed_caller(request, READ_EVENTS)
    page = parse_request_page(request, sorts=SORTS, default_sort=DEFAULT_SORT, filters=FILTERS)
    rows, total = await _context(request).events.list_events(caller, page)
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
    caller = await confirmed_caller(request, STREAM_EVENTS)
    context = _context(request)
    event_type = parse_request_filters(request, {"type": FILTERS["type"]}).get("type")
    resume_after = None
    last_id = last_event_id(request)
    if last_id is not None:
        try:
            resume_after = await context.events.get(caller, last_id)
        except NotFoundError:
            raise NotFoundError(RESUME_UNKNOWN) from None
    await context.streams.serve(request, caller, event_type, resume_after)


@events.get("/api/events/<event_id:str>")
@spec.get_operation(
    "getEvent", "events", EventPublic, "The event, as delivered", path=[EVENT_ID], errors=(403, 404)
)
async def get_event(request: Request, event_id: str) -> HTTPResponse:
    """One event by its id; another user's is 404, like one that does not exist."""
    caller = await confirmed_caller(request, READ_EVENTS)
    return event_response(await _context(request).events.get(caller, event_id))
