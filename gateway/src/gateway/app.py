"""Gateway application factory."""

from __future__ import annotations

import asyncio

from prometheus_client import Counter
from sanic import Request
from sanic.response import HTTPResponse, html

from api_shared.auth import JwksKeySource, TokenVerifier, install_authentication
from api_shared.representation import json_response
from api_shared.service import create_service_app
from api_shared.types import App
from gateway.admin import install_admin_port
from gateway.clientip import parse_networks
from gateway.cors import install_cors, is_preflight, preflight_response
from gateway.dispatch import Dispatcher, Limits
from gateway.docs import DocsCache
from gateway.metrics import install_upstream_latency
from gateway.proxy import Proxy, close_session, new_session
from gateway.proxycheck import SoleAddressWatch
from gateway.ratelimit import Buckets, MemoryBuckets, Policy, RedisBuckets, redis_client
from gateway.readiness import UpstreamStatus
from gateway.routing import BOOKS, ORDERS, USERS
from gateway.settings import Settings
from gateway.swagger import SWAGGER_UI
from gateway.upstreams import Upstream

ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def create_app(settings: Settings | None = None, verifier: TokenVerifier | None = None) -> App:
    """The gateway; ``verifier`` defaults to one over users-service's JWKS."""
    settings = settings or Settings()
    app = create_service_app("gateway", settings, edge=True, metric_labels=("upstream",))
    install_upstream_latency(app)
    # No sanic-ext here: the gateway serves the merged OpenAPI document itself, answers CORS
    # itself, and its injection machinery would cost every proxied request.
    app.config.AUTO_EXTEND = False
    registry = app.ctx.metrics_registry
    upstream_errors = Counter(
        "gateway_upstream_errors_total",
        "Upstream failures by upstream and kind.",
        ["upstream", "kind"],
        registry=registry,
    )
    rate_limited = Counter(
        "gateway_rate_limited_total",
        "Requests refused by a rate limit.",
        ["policy"],
        registry=registry,
    )
    limiter_errors = Counter(
        "gateway_rate_limiter_errors_total",
        "Rate-limiter Redis failures (limits then applied with this process's own buckets).",
        registry=registry,
    )
    admin = install_admin_port(app, settings.host, settings.admin_port)

    key_source: JwksKeySource | None = None
    if verifier is None:
        key_source = JwksKeySource(
            settings.jwks_url, refresh_interval_s=settings.jwks_refresh_interval_s
        )
        verifier = TokenVerifier(
            key_source, issuer=settings.jwt_issuer, audience=settings.jwt_audience
        )
    install_authentication(app, verifier)
    origins = frozenset(settings.cors_origins)
    install_cors(app, origins)

    upstreams = {
        name: Upstream.of(name, urls, settings.upstream_down_s)
        for name, urls in (
            (USERS, settings.users_service_urls),
            (ORDERS, settings.orders_service_urls),
            (BOOKS, settings.books_service_urls),
        )
    }
    trusted = parse_networks(settings.trusted_proxies)
    limits = Limits(
        default=Policy("default", settings.rate_limit_rps, settings.rate_limit_burst),
        address=Policy("address", settings.address_rps, settings.address_burst),
        login=_per_minute("login", settings.login_rate_limit_per_minute),
        login_account=_per_minute("login-account", settings.login_account_per_minute),
        login_account_ceiling=_per_minute("login-account-ceiling", settings.login_account_ceiling),
        signup=_per_minute("signup", settings.signup_rate_limit_per_minute),
        refresh=_per_minute("refresh", settings.refresh_rate_limit_per_minute),
        refresh_session=_per_minute(
            "refresh-session", settings.refresh_session_rate_limit_per_minute
        ),
    )
    watch = SoleAddressWatch()

    async def ping_redis() -> object:
        return await app.ctx.redis.ping()

    # /ready checks nothing beyond the gateway itself (see gateway.readiness); the upstreams'
    # state is on the admin port's /status and in gateway_upstream_ready.
    status = UpstreamStatus(upstreams, registry, ping_redis if settings.redis_url else None)

    @admin.get("/status", name="status")
    async def get_status(request: Request) -> HTTPResponse:
        return json_response(await status.report(app.ctx.proxy.session))

    @app.before_server_start
    async def open_clients(app: App) -> None:
        app.ctx.proxy = Proxy(
            new_session(),
            timeout_s=settings.upstream_timeout_s,
            connect_timeout_s=settings.upstream_connect_timeout_s,
            trusted_proxies=trusted,
            on_failure=lambda upstream, kind: upstream_errors.labels(upstream, kind).inc(),
        )
        buckets: Buckets = MemoryBuckets()
        if settings.redis_url:
            app.ctx.redis = redis_client(settings.redis_url)
            buckets = RedisBuckets(app.ctx.redis, on_error=limiter_errors.inc, fallback=buckets)
        app.ctx.dispatcher = Dispatcher(
            upstreams,
            buckets,
            limits,
            trusted,
            on_rate_limited=lambda policy: rate_limited.labels(policy).inc(),
            on_client=watch.observe,
        )
        app.ctx.background = [
            asyncio.create_task(_conclude_after(watch)),
            asyncio.create_task(status.keep_fresh(app.ctx.proxy.session)),
        ]
        if key_source is not None:
            # Warm the key cache without delaying start-up (users-service may start later),
            # then fetch it again every JWKS_REFRESH_INTERVAL_S.
            app.ctx.background.append(asyncio.create_task(key_source.keep_fresh()))

    @app.before_server_stop
    async def stop_background_tasks(app: App) -> None:
        for task in app.ctx.background:
            task.cancel()
        await asyncio.gather(*app.ctx.background, return_exceptions=True)

    @app.after_server_stop
    async def close_clients(app: App) -> None:
        await close_session(app.ctx.proxy.session)
        if getattr(app.ctx, "redis", None) is not None:
            await app.ctx.redis.aclose()

    docs = DocsCache(upstreams)

    @app.get("/openapi.json", name="openapi")
    async def get_openapi(request: Request) -> HTTPResponse:
        return json_response(await docs.get(request.app.ctx.proxy.session))

    @app.get("/docs", name="docs")
    async def get_docs(request: Request) -> HTTPResponse:
        return html(SWAGGER_UI)

    @app.route("/<path:path>", methods=ALL_METHODS, name="proxy")
    async def proxy(request: Request, path: str) -> HTTPResponse:
        if is_preflight(request):
            return preflight_response(request, origins)
        dispatcher: Dispatcher = request.app.ctx.dispatcher
        return await dispatcher.handle(request, request.app.ctx.proxy)

    return app


def _per_minute(name: str, per_minute: int) -> Policy:
    """``per_minute`` requests at once, refilled evenly over the minute."""
    return Policy(name, per_minute / 60, per_minute)


async def _conclude_after(watch: SoleAddressWatch) -> None:
    await asyncio.sleep(max(0.0, watch.deadline - watch.clock()))
    watch.conclude()
