"""The gateway's context: the parts its handlers work with, built once by ``wire``.

``wire`` only composes: the edge pipeline, with what it forwards over and limits with, is
built by ``pipeline.wire_pipeline``; the documents by ``gateway.docs``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sanic import Request

from api_shared.auth.api_keys import ApiKeyResolver
from api_shared.auth.verifier import TokenVerifier, jwks_verifier
from api_shared.background import Periodic
from api_shared.context import Resource
from api_shared.http import HttpSession
from api_shared.standing import CallerCheck
from gateway.docs.asyncapi import events_docs
from gateway.docs.cache import DocsCache
from gateway.docs.openapi import openapi_docs
from gateway.metrics import GatewayMetrics
from gateway.pipeline import EdgePipeline, Limits, wire_pipeline
from gateway.routing import BOOKS, ORDERS, USERS, WEBHOOKS
from gateway.settings import Settings
from gateway.status import PROBE_INTERVAL_S, UpstreamStatus
from gateway.upstream.replicas import Upstream
from gateway.upstream.stream import OpenStreams


@dataclass(frozen=True, slots=True)
class Context:
    settings: Settings
    verifier: TokenVerifier  # the tokens of public requests
    # Their API keys: users-service's word on each (api_shared.auth.authenticate asks it),
    # kept STANDING_CACHE_S, so a revoked key is refused here within that time.
    api_keys: ApiKeyResolver
    upstreams: dict[str, Upstream]
    limits: Limits
    pipeline: EdgePipeline  # each public request: route, identify, limit, forward
    streams: OpenStreams  # the streamed answers open now, ended when the server stops
    http: HttpSession  # the gateway's own calls: the JWKS, keys, the documents it merges, probes
    docs: DocsCache  # the merged OpenAPI document
    events_docs: DocsCache  # the merged AsyncAPI document
    status: UpstreamStatus  # the upstreams' state, on the admin port's /status
    metrics: GatewayMetrics
    cors_origins: frozenset[str]
    resources: tuple[Resource, ...]


def wire(
    settings: Settings,
    *,
    verifier: TokenVerifier | None = None,
    api_keys: ApiKeyResolver | None = None,
) -> Context:
    """Build every part from ``settings``; a keyword replaces that part (tests pass fakes)."""
    # The gateway's own calls (the JWKS, API keys, the documents it merges, the status probes)
    # share one session; forwarding has its own pool (gateway.upstream), and streams their
    # own client (gateway.upstream.stream).
    http = HttpSession(timeout_s=settings.upstream_timeout_s)
    verifier, key_refresh = _verifier(settings, http, verifier)
    metrics = GatewayMetrics()
    upstreams = _upstreams(settings)
    edge = wire_pipeline(settings, upstreams, metrics)
    # /ready checks nothing beyond the gateway itself (see gateway.status); the upstreams'
    # state is on the admin port's /status and in gateway_upstream_ready.
    status = UpstreamStatus(http, upstreams, metrics.upstream_ready, edge.store_check)
    probes = Periodic("upstream_status", status.report, PROBE_INTERVAL_S)
    return Context(
        settings=settings,
        verifier=verifier,
        api_keys=api_keys if api_keys is not None else CallerCheck.of(http, settings),
        upstreams=upstreams,
        limits=edge.limits,
        pipeline=edge.pipeline,
        streams=edge.streams,
        http=http,
        docs=openapi_docs(http, upstreams),
        events_docs=events_docs(http, upstreams),
        status=status,
        metrics=metrics,
        cors_origins=frozenset(settings.cors_origins),
        # Started in this order, stopped in the reverse: the session outlives its users.
        resources=(http, *edge.forwarding, probes, edge.proxy_check, metrics, *key_refresh),
    )


def context_of(request: Request) -> Context:
    """The typed context of the app serving ``request``."""
    context: Context = request.app.ctx.context
    return context


def _upstreams(settings: Settings) -> dict[str, Upstream]:
    return {
        name: Upstream.of(name, urls, settings.upstream_down_s)
        for name, urls in (
            (USERS, settings.users_service_urls),
            (ORDERS, settings.orders_service_urls),
            (BOOKS, settings.books_service_urls),
            (WEBHOOKS, settings.webhooks_service_urls),
        )
    }


def _verifier(
    settings: Settings, http: HttpSession, verifier: TokenVerifier | None
) -> tuple[TokenVerifier, tuple[Resource, ...]]:
    """``verifier``, or one checking the published keys (JWKS), fetched over ``http`` every
    JWKS_REFRESH_INTERVAL_S (each fetch within its own short timeout): its refresh is a
    resource."""
    if verifier is not None:
        return verifier, ()
    verifier, refresh = jwks_verifier(
        settings, http, refresh_interval_s=settings.jwks_refresh_interval_s
    )
    return verifier, (refresh,)
