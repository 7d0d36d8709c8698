"""webhooks-service's context: the parts its handlers work with, built once by ``wire``."""

from __future__ import annotations

from dataclasses import dataclass

from sanic import Request

from api_shared.auth import TokenVerifier, jwks_verifier
from api_shared.context import Resource
from api_shared.http import HttpSession
from api_shared.standing import CallerCheck, CallerConfirmation
from webhooks_service.addresses import UrlGuard
from webhooks_service.ports import Clock
from webhooks_service.repository import DeliveryRepository, EndpointRepository
from webhooks_service.secret_box import SecretBox, load_secret_box
from webhooks_service.services import WebhookService, utc_now
from webhooks_service.settings import Settings


@dataclass(frozen=True, slots=True)
class Context:
    settings: Settings
    verifier: TokenVerifier  # users-service's tokens, by its JWKS
    standing: CallerConfirmation  # users-service's word on whether a caller is an admin now
    webhooks: WebhookService
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
    resources: list[Resource] = []
    http = HttpSession(timeout_s=settings.users_timeout_s)  # one per process
    if verifier is None or standing is None:
        resources.append(http)  # first: the parts below call through it
    if verifier is None:
        verifier, key_refresh = jwks_verifier(settings, http)
        resources.append(key_refresh)
    if standing is None:
        standing = CallerCheck.of(http, settings)
    webhooks = WebhookService(
        EndpointRepository(),
        DeliveryRepository(),
        guard or url_guard(settings),
        box or load_secret_box(settings),
        clock,
        max_grace_s=settings.secret_grace_s,
    )
    return Context(
        settings=settings,
        verifier=verifier,
        standing=standing,
        webhooks=webhooks,
        resources=tuple(resources),
    )


def url_guard(settings: Settings) -> UrlGuard:
    """The SSRF rules as configured (docs/api.md#webhooks)."""
    return UrlGuard(allow_private=settings.allow_private, allowed_hosts=settings.allowed_hosts)


def context_of(request: Request) -> Context:
    """The typed context of the app serving ``request``."""
    context: Context = request.app.ctx.context
    return context
