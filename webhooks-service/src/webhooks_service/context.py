"""webhooks-service's context: the parts its handlers work with, built once by ``wire``,
composing the parts of the endpoint API (``endpoints``) and the event log (``event_log``) with
users-service's word on callers."""

from __future__ import annotations

from dataclasses import dataclass

from api_shared.auth import TokenVerifier
from api_shared.context import Resource
from api_shared.http import HttpSession
from api_shared.standing import CallerConfirmation
from api_shared.trust import TrustsUsersService, trust_users_service
from webhooks_service.addresses import UrlGuard
from webhooks_service.clock import Clock, utc_now
from webhooks_service.endpoints import WebhookService, wire_endpoints
from webhooks_service.event_log import EventFeed, EventLogService, EventStreams, wire_event_log
from webhooks_service.secret_box import SecretBox
from webhooks_service.settings import Settings


@dataclass(frozen=True, slots=True)
class Context(TrustsUsersService):
    settings: Settings
    verifier: TokenVerifier  # users-service's tokens, by its JWKS
    standing: CallerConfirmation  # users-service's word on whether a caller is an admin now
    webhooks: WebhookService  # /api/webhooks… (endpoints.routes)
    events: EventLogService  # GET /api/events (event_log.routes)
    feed: EventFeed  # the log, live, for this process's streams
    streams: EventStreams  # GET /api/events/stream
    resources: tuple[Resource, ...]


def wire(
    settings: Settings,
    *,
    verifier: TokenVerifier | None = None,
    guard: UrlGuard | None = None,
    standing: CallerConfirmation | None = None,
    box: SecretBox | None = None,
    clock: Clock = utc_now,
) -> Context:
    """Build every part from ``settings``; a keyword replaces that part (tests pass fakes)."""
    http = HttpSession(timeout_s=settings.users_timeout_s)  # one per process
    trust = trust_users_service(settings, http, verifier=verifier, standing=standing)
    log = wire_event_log(settings, trust.standing)
    return Context(
        settings=settings,
        verifier=trust.verifier,
        standing=trust.standing,
        webhooks=wire_endpoints(settings, log=log.store, guard=guard, box=box, clock=clock),
        events=log.service,
        feed=log.feed,
        streams=log.streams,
        resources=(*trust.resources, log.feed),
    )
