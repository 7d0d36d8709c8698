"""The edge pipeline: what the gateway does with each public request, in order:

resolve the route → resolve the client's address → take a token from the address's bucket →
identify the caller → take a token from the caller's bucket → require a credential where the
route does → forward to a replica (gateway.upstream) → return the upstream's answer with
limit headers. A streaming route's answer (Server-Sent Events) is admitted the same way, then
forwarded as it arrives (gateway.upstream.stream), the limit headers on its head.

Every request takes a token from its client address's coarse bucket before its credential is
looked at: an API key is a question to users-service, so a flood of made-up keys is paid from
the address's budget first. Then one from its caller's bucket: the one all of an owner's API
keys share (apart from the owner's own tokens), else the access token's subject, else the
address; so holding many tokens or keys buys no more than one account's two budgets, and
accounts no more than the address's budget. The route
table names the routes that draw from a stricter per-address bucket instead of the caller's:
logins, refreshes and sign-ups (IPv6 by its /48 there). Budgets that need to know what a body
means or whom it names (failed logins per account, guesses at a current password, refreshes
per session, password work of any kind) are users-service's: it knows, and it answers 429
itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sanic import Request
from sanic.response import BaseHTTPResponse, HTTPResponse

from api_shared.auth.principal import Principal
from api_shared.auth.request import authenticate
from api_shared.background import BackgroundTask
from api_shared.context import Resource
from api_shared.errors import (
    ApiError,
    ForbiddenError,
    NotFoundError,
    UnauthenticatedError,
    UnavailableError,
)
from api_shared.ratelimit import (
    IPV6_SITE_PREFIX,
    Buckets,
    Decision,
    Limiter,
    MemoryBuckets,
    Policy,
    address_key,
    per_minute,
    shared_buckets,
)
from gateway.clientip import ClientAddresses, IPNetwork, parse_networks
from gateway.metrics import GatewayMetrics
from gateway.proxycheck import SoleAddressWatch
from gateway.routing import (
    ACCOUNT_TOKEN,
    LOGIN,
    REFRESH,
    RESET_REQUEST,
    SIGNUP,
    Access,
    Route,
    resolve,
)
from gateway.settings import Settings
from gateway.status import StoreCheck
from gateway.upstream.proxy import Proxy
from gateway.upstream.replicas import Upstream
from gateway.upstream.stream import OpenStreams, StreamProxy


@dataclass(frozen=True, slots=True)
class Limits:
    default: Policy  # per caller: the token's subject, else the client address
    api_key: Policy  # per owner of API keys: every key of one user draws from one bucket
    address: Policy  # per client address, every request
    # Per client address, instead of the caller's, for the routes that name them
    # (gateway.routing): logins, refreshes, sign-ups, reset requests, mailed tokens.
    charged: Mapping[str, Policy]

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        """The policies the settings describe (docs/api.md#limits)."""
        return cls(
            default=Policy("default", settings.rate_limit_rps, settings.rate_limit_burst),
            api_key=Policy("api-key", settings.api_key_rps, settings.api_key_burst),
            address=Policy("address", settings.address_rps, settings.address_burst),
            charged={
                LOGIN: per_minute(LOGIN, settings.login_rate_limit_per_minute),
                REFRESH: per_minute(REFRESH, settings.refresh_rate_limit_per_minute),
                SIGNUP: per_minute(SIGNUP, settings.signup_rate_limit_per_minute),
                RESET_REQUEST: per_minute(
                    RESET_REQUEST, settings.reset_request_rate_limit_per_minute
                ),
                ACCOUNT_TOKEN: per_minute(
                    ACCOUNT_TOKEN, settings.account_token_rate_limit_per_minute
                ),
            },
        )


class EdgePipeline:
    """Admits each public request and forwards it over its own ``proxy``, or ``streams`` for a
    streaming route."""

    def __init__(
        self,
        proxy: Proxy,
        streams: StreamProxy,
        upstreams: dict[str, Upstream],
        buckets: Buckets,
        limits: Limits,
        trusted_proxies: tuple[IPNetwork, ...],
        on_rate_limited: Callable[[str], None] = lambda policy: None,
        on_client: Callable[[str], None] = lambda address: None,
    ) -> None:
        self.proxy = proxy
        self.streams = streams
        self.upstreams = upstreams
        self.limiter = Limiter(buckets, on_refused=on_rate_limited)
        self.limits = limits
        self.clients = ClientAddresses(trusted_proxies, on_client)

    async def handle(self, request: Request) -> HTTPResponse | None:
        """The answer to ``request``; None when it was streamed (already answered)."""
        route = resolve(request.path)
        # Named for metrics, traces and the access line (never the path: unbounded).
        request.ctx.route_template = route.template if route is not None else "unmatched"
        if route is None:
            raise NotFoundError("No route matches this path.")
        ip, forwarded_for = self.clients.address_of(request)
        taken = [await self._take(self.limits.address, f"addr:{address_key(ip)}")]
        principal, auth_error = await _identify(request)
        taken.append(await self._take(*self._bucket_for(route, request.method, principal, ip)))
        if route.access_for(request.method) is Access.AUTHENTICATED and principal is None:
            raise auth_error or UnauthenticatedError()
        upstream = self.upstreams[route.upstream]
        if route.streams(request.method):

            def add_limits(head: BaseHTTPResponse) -> None:
                _add_limit_headers(head, taken)

            streamed = await self.streams.forward(request, upstream, ip, forwarded_for, add_limits)
            if streamed is None:
                return None
            response = streamed
        else:
            response = await self.proxy.forward(request, upstream, ip, forwarded_for)
        _add_limit_headers(response, taken)
        return response

    async def admit(self, request: Request) -> None:
        """The address budget alone, for the gateway's own documents (/openapi.json, /docs):
        they cost the upstreams nothing per call, but the address still pays for each."""
        ip, _ = self.clients.address_of(request)
        await self.limiter.take(self.limits.address, f"addr:{address_key(ip)}")

    async def _take(self, policy: Policy, key: str) -> tuple[Policy, Decision]:
        """Take a token from ``key``'s bucket, or RATE_LIMITED."""
        return policy, await self.limiter.take(policy, key)

    def _bucket_for(
        self, route: Route, method: str, principal: Principal | None, ip: str
    ) -> tuple[Policy, str]:
        charge = route.charge_for(method)
        if charge is not None:
            # Cheap to rotate within a site's /48: these are the budgets an attacker spends.
            return self.limits.charged[charge], f"{charge}:ip:{address_key(ip, IPV6_SITE_PREFIX)}"
        if principal is not None and principal.is_api_key:
            # Per owner, never per key: 50 keys would be 50 budgets. Apart from the owner's
            # tokens, so that a script's flood leaves its owner's own use of the API usable.
            return self.limits.api_key, f"keys:{principal.subject}"
        if principal is not None:
            return self.limits.default, f"sub:{principal.subject}"
        return self.limits.default, f"ip:{address_key(ip)}"


def _add_limit_headers(response: BaseHTTPResponse, taken: list[tuple[Policy, Decision]]) -> None:
    """The headers of the tightest bucket the request drew from; but users-service's own 429
    (an account's budget, say) names its policy: that is kept."""
    if "ratelimit-policy" not in response.headers:
        policy, decision = min(taken, key=lambda pair: pair[1].remaining)
        response.headers.update(decision.headers(policy))


async def _identify(request: Request) -> tuple[Principal | None, ApiError | None]:
    """The caller if a valid credential was sent; else None and why (raised only where one is
    required): not valid (401), an API key of a suspended owner (403), or a key users-service
    could not be asked about (503). A public route forwards the request, as from its address,
    and its service decides."""
    if "authorization" not in request.headers:
        return None, None
    try:
        return await authenticate(request), None
    except (UnauthenticatedError, ForbiddenError, UnavailableError) as error:
        return None, error


@dataclass(frozen=True, slots=True)
class PipelinePart:
    """The edge pipeline, and what it forwards over and limits with."""

    pipeline: EdgePipeline
    limits: Limits
    streams: OpenStreams  # the streamed answers open now, ended when the server stops
    # Resources, started in this order: the proxy's pool, the streams' client and, with
    # REDIS_URL, the limits' buckets in Redis.
    forwarding: tuple[Resource, ...]
    store_check: StoreCheck | None  # pings the limits' Redis (for /status); None without one
    proxy_check: BackgroundTask  # the warning about a missing TRUSTED_PROXIES, if it is due


def wire_pipeline(
    settings: Settings, upstreams: dict[str, Upstream], metrics: GatewayMetrics
) -> PipelinePart:
    """The pipeline over ``upstreams``: the proxy's pool and the streams' client, the limits
    in Redis when REDIS_URL is set (else in this process), each counted in ``metrics``."""
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
    limits = Limits.from_settings(settings)
    watch = SoleAddressWatch()
    pipeline = EdgePipeline(
        proxy,
        stream_proxy,
        upstreams,
        shared if shared is not None else MemoryBuckets(),
        limits,
        parse_networks(settings.trusted_proxies),
        on_rate_limited=metrics.refused_by,
        on_client=watch.observe,
    )
    return PipelinePart(
        pipeline=pipeline,
        limits=limits,
        streams=streams,
        forwarding=(proxy, stream_proxy, *([shared] if shared is not None else [])),
        store_check=shared.redis.ping if shared is not None else None,
        proxy_check=BackgroundTask("proxy_check", watch.conclude_at_deadline),
    )
