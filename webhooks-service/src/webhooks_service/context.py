"""webhooks-service's context: the parts its handlers work with, built once by ``wire``,
composing the parts of the endpoint API (``endpoints``) and the event log (``event_log``) with
users-service's word on callers."""

from __future__ import annotations

from dataclasses import dataclass

from api_shared.auth import ApiKeyResolver, TokenVerifier, jwks_verifier
from api_shared.context import Resource
from api_shared.http import HttpSession
from api_shared.standing import CallerCheck, CallerConfirmation
from webhooks_service.addresses import UrlGuard
from webhooks_service.clock import Clock, utc_now
from webhooks_service.endpoints import WebhookService, wire_endpoints
from webhooks_service.event_log import EventFeed, EventLogService, EventStreams, wire_event_log
from webhooks_service.secret_box import SecretBox
from webhooks_service.settings import Settings


@dataclass(frozen=True, slots=True)
class Context:
    settings: Settings
    verifier: TokenVerifier  # users-service's tokens, by its JWKS
    standing: CallerConfirmation  # users-service's word on whether a caller is an admin now
    webhooks: WebhookService  # /api/webhooks… (endpoints.routes)
    events: EventLogService  # GET /api/events (event_log.routes)
    feed: EventFeed  # the log, live, for this process's streams
    streams: EventStreams  # GET /api/events/stream
    resources: tuple[Resource, ...]

    @property
    def api_keys(self) -> ApiKeyResolver:
        """API keys are users-service's: asked through ``standing``, answers kept as long."""
        return self.standing


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
    resources: list[Resource] = []
    http = HttpSession(timeout_s=settings.users_timeout_s)  # one per process
    if verifier is None or standing is None:
        resources.append(http)  # first: the parts below call through it
    if verifier is None:
        verifier, key_refresh = jwks_verifier(settings, http)
        resources.append(key_refresh)
    if standing is None:
        standing = CallerCheck.of(http, settings)
    log = wire_event_log(settings, standing)
    return Context(
        settings=settings,
        verifier=verifier,
        standing=standing,
        webhooks=wire_endpoints(settings, log=log.store, guard=guard, box=box, clock=clock),
        events=log.service,
        feed=log.feed,
        streams=log.streams,
        resources=(*resources, log.feed),
    )
