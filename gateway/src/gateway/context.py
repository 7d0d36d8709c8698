"""The gateway's context: the parts its handlers work with, built once by ``wire``."""

from __future__ import annotations

from dataclasses import dataclass

from sanic import Request

from api_shared.auth.api_keys import ApiKeyResolver
from api_shared.auth.verifier import TokenVerifier, jwks_verifier
from api_shared.background import BackgroundTask, Periodic
from api_shared.context import Resource
from api_shared.http import HttpSession
from api_shared.ratelimit import Buckets, MemoryBuckets, shared_buckets
from api_shared.standing import CallerCheck
from gateway.clientip import parse_networks
from gateway.docs.asyncapi import events_docs
from gateway.docs.cache import DocsCache
from gateway.docs.openapi import openapi_docs
from gateway.metrics import GatewayMetrics
from gateway.pipeline import EdgePipeline, Limits
from gateway.proxycheck import SoleAddressWatch
from gateway.routing import BOOKS, ORDERS, USERS, WEBHOOKS
from gateway.settings import Settings
from gateway.status import PROBE_INTERVAL_S, UpstreamStatus
from gateway.upstream.proxy import Proxy
from gateway.upstream.replicas import Upstream
from gateway.upstream.stream import OpenStreams, StreamProxy


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
    key_refresh: tuple[Resource, ...] = ()
    if verifier is None:
        # Fetched every JWKS_REFRESH_INTERVAL_S, each fetch within its own short timeout.
        verifier, refresh = jwks_verifier(
            settings, http, refresh_interval_s=settings.jwks_refresh_interval_s
        )
        key_refresh = (refresh,)
    metrics = GatewayMetrics()
    upstreams = _upstreams(settings)
    trusted = parse_networks(settings.trusted_proxies)
    proxy = Proxy(
        timeout_s=settings.upstream_timeout_s,
        connect_timeout_s=settings.upstream_connect_timeout_s,
        on_failure=metrics.upstream_failed,
    )
    streams = OpenStreams(settings.max_streams, on_count=metrics.streams_open)
    stream_proxy = StreamProxy(
        streams,
        connect_timeout_s=settings.upstream_connect_timeout_s,
        head_timeout_s=settings.upstream_timeout_s,
        idle_timeout_s=settings.stream_idle_timeout_s,
        on_failure=metrics.upstream_failed,
    )
    shared = shared_buckets(settings.redis_url, on_error=metrics.limiter_failed)
    buckets: Buckets = shared if shared is not None else MemoryBuckets()
    limits = Limits.from_settings(settings)
    watch = SoleAddressWatch()
    pipeline = EdgePipeline(
        proxy,
        stream_proxy,
        upstreams,
        buckets,
        limits,
        trusted,
        on_rate_limited=metrics.refused_by,
        on_client=watch.observe,
    )
    # /ready checks nothing beyond the gateway itself (see gateway.status); the upstreams'
    # state is on the admin port's /status and in gateway_upstream_ready.
    status = UpstreamStatus(
        http, upstreams, metrics.upstream_ready, shared.redis.ping if shared is not None else None
    )
    return Context(
        settings=settings,
        verifier=verifier,
        api_keys=api_keys if api_keys is not None else CallerCheck.of(http, settings),
        upstreams=upstreams,
        limits=limits,
        pipeline=pipeline,
        streams=streams,
        http=http,
        docs=openapi_docs(http, upstreams),
        events_docs=events_docs(http, upstreams),
        status=status,
        metrics=metrics,
        cors_origins=frozenset(settings.cors_origins),
        # Started in this order, stopped in the reverse: the session outlives its users.
        resources=(
            http,
            proxy,
            stream_proxy,
            *([shared] if shared is not None else []),
            Periodic("upstream_status", status.report, PROBE_INTERVAL_S),
            BackgroundTask("proxy_check", watch.conclude_at_deadline),
            metrics,
            *key_refresh,
        ),
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
