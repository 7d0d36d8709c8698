"""The edge pipeline: what the gateway does with each public request, in order:

resolve the route → identify the caller → resolve the client's address → take rate-limit
tokens → require a token where the route does → forward to a replica (gateway.upstream) →
return the upstream's answer with limit headers.

Every request takes a token from its client address's coarse bucket and one from its caller's
bucket (the token's subject, else the address), so that holding many tokens buys no more
than the address's budget. The route table names the routes that draw from a stricter
per-address bucket instead of the caller's: logins, refreshes and sign-ups (IPv6 by its /48
there). Budgets that need to know what a body means or whom it names (failed logins per
account, guesses at a current password, refreshes per session, password work of any kind)
are users-service's: it knows, and it answers 429 itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sanic import Request
from sanic.response import HTTPResponse

from api_shared.auth import Principal, authenticate
from api_shared.errors import NotFoundError, UnauthenticatedError
from api_shared.ratelimit import (
    IPV6_SITE_PREFIX,
    Buckets,
    Decision,
    Limiter,
    Policy,
    address_key,
    per_minute,
)
from gateway.clientip import ClientAddresses, IPNetwork
from gateway.routing import LOGIN, REFRESH, SIGNUP, Access, Route, resolve
from gateway.settings import Settings
from gateway.upstream.proxy import Proxy
from gateway.upstream.replicas import Upstream


@dataclass(frozen=True, slots=True)
class Limits:
    default: Policy  # per caller: the token's subject, else the client address
    address: Policy  # per client address, every request
    # Per client address, instead of the caller's, for the routes that name them
    # (gateway.routing): logins, refreshes, sign-ups.
    charged: Mapping[str, Policy]

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        """The policies the settings describe (docs/api.md#limits)."""
        return cls(
            default=Policy("default", settings.rate_limit_rps, settings.rate_limit_burst),
            address=Policy("address", settings.address_rps, settings.address_burst),
            charged={
                LOGIN: per_minute(LOGIN, settings.login_rate_limit_per_minute),
                REFRESH: per_minute(REFRESH, settings.refresh_rate_limit_per_minute),
                SIGNUP: per_minute(SIGNUP, settings.signup_rate_limit_per_minute),
            },
        )


class EdgePipeline:
    """Admits each public request and forwards it over its own ``proxy``."""

    def __init__(
        self,
        proxy: Proxy,
        upstreams: dict[str, Upstream],
        buckets: Buckets,
        limits: Limits,
        trusted_proxies: tuple[IPNetwork, ...],
        on_rate_limited: Callable[[str], None] = lambda policy: None,
        on_client: Callable[[str], None] = lambda address: None,
    ) -> None:
        self.proxy = proxy
        self.upstreams = upstreams
        self.limiter = Limiter(buckets, on_refused=on_rate_limited)
        self.limits = limits
        self.clients = ClientAddresses(trusted_proxies, on_client)

    async def handle(self, request: Request) -> HTTPResponse:
        route = resolve(request.path)
        # Named for metrics, traces and the access line (never the path: unbounded).
        request.ctx.route_template = route.template if route is not None else "unmatched"
        if route is None:
            raise NotFoundError("No route matches this path.")
        principal, auth_error = await _identify(request)
        ip, forwarded_for = self.clients.address_of(request)
        taken = [
            await self._take(self.limits.address, f"addr:{address_key(ip)}"),
            await self._take(*self._bucket_for(route, request.method, principal, ip)),
        ]
        if route.access_for(request.method) is Access.AUTHENTICATED and principal is None:
            raise auth_error or UnauthenticatedError()
        response = await self.proxy.forward(
            request, self.upstreams[route.upstream], ip, forwarded_for
        )
        # users-service's own 429 (an account's budget, say) names its policy: keep it.
        if "ratelimit-policy" not in response.headers:
            policy, decision = min(taken, key=lambda pair: pair[1].remaining)
            response.headers.update(decision.headers(policy))
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
        if principal is not None:
            return self.limits.default, f"sub:{principal.subject}"
        return self.limits.default, f"ip:{address_key(ip)}"


async def _identify(request: Request) -> tuple[Principal | None, UnauthenticatedError | None]:
    """The caller if a valid token was sent; else None and why (raised only where required)."""
    if "authorization" not in request.headers:
        return None, None
    try:
        return await authenticate(request), None
    except UnauthenticatedError as error:
        return None, error
