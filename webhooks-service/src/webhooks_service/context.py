"""webhooks-service's context: the parts its handlers work with, built once by ``wire``."""

from __future__ import annotations

from dataclasses import dataclass

from sanic import Request

from api_shared.auth import ApiKeyResolver, TokenVerifier, jwks_verifier
from api_shared.context import Resource
from api_shared.http import HttpSession
from api_shared.standing import CallerCheck, CallerConfirmation
from webhooks_service.addresses import UrlGuard
from webhooks_service.event_feed import EventFeed
from webhooks_service.event_log import EventLogService
from webhooks_service.event_stream import EventStreams, StreamTimings
from webhooks_service.ports import Clock
from webhooks_service.repository import (
    DeliveryRepository,
    EndpointRepository,
    EventLogRepository,
)
from webhooks_service.secret_box import SecretBox, load_secret_box
from webhooks_service.services import WebhookService, utc_now
from webhooks_service.settings import Settings

# The feed's poll while PostgreSQL notifies it of each write: a safety net only.
LISTENING_POLL_S = 5.0
RECONNECT_MS = 2000  # what a stream tells its client to wait before reconnecting


@dataclass(frozen=True, slots=True)
class Context:
    settings: Settings
    verifier: TokenVerifier  # users-service's tokens, by its JWKS
    standing: CallerConfirmation  # users-service's word on whether a caller is an admin now
    webhooks: WebhookService
    events: EventLogService  # GET /api/events
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
    log = EventLogRepository()
    webhooks = WebhookService(
        EndpointRepository(),
        DeliveryRepository(),
        guard or url_guard(settings),
        box or load_secret_box(settings),
        clock,
        max_grace_s=settings.secret_grace_s,
        log=log,
    )
    feed = EventFeed(
        log,
        max_streams=settings.stream_max,
        max_per_caller=settings.stream_max_per_caller,
        max_per_address=settings.stream_max_per_address,
        buffer=settings.stream_buffer,
        idle_s=settings.stream_poll_s,
        listening_idle_s=LISTENING_POLL_S,
    )
    timings = StreamTimings(
        heartbeat_s=settings.stream_heartbeat_s,
        recheck_s=settings.stream_recheck_s,
        send_timeout_s=settings.stream_send_timeout_s,
        retry_ms=RECONNECT_MS,
    )
    return Context(
        settings=settings,
        verifier=verifier,
        standing=standing,
        webhooks=webhooks,
        events=EventLogService(log),
        feed=feed,
        streams=EventStreams(feed, log, standing, timings),
        resources=(*resources, feed),
    )


def url_guard(settings: Settings) -> UrlGuard:
    """The SSRF rules as configured (docs/api.md#webhooks)."""
    return UrlGuard(allow_private=settings.allow_private, allowed_hosts=settings.allowed_hosts)


def context_of(request: Request) -> Context:
    """The typed context of the app serving ``request``."""
    context: Context = request.app.ctx.context
    return context
