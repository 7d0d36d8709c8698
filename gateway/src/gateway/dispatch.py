"""What the gateway does with each public request, in order:

resolve the route → identify the caller → take a rate-limit token → require a token where
the route does → forward to a replica → return the upstream's answer with limit headers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sanic import Request
from sanic.response import HTTPResponse

from api_shared.auth import Principal, authenticate
from api_shared.errors import NotFoundError, RateLimitedError, UnauthenticatedError
from gateway.clientip import IPNetwork, client_ip
from gateway.proxy import Proxy
from gateway.ratelimit import Buckets, Policy
from gateway.routing import Access, resolve
from gateway.upstreams import Upstream

LOGIN_PATH = "/api/auth/token"


@dataclass(frozen=True, slots=True)
class Limits:
    default: Policy
    login: Policy


class Dispatcher:
    def __init__(
        self,
        upstreams: dict[str, Upstream],
        buckets: Buckets,
        limits: Limits,
        trusted_proxies: tuple[IPNetwork, ...],
        on_rate_limited: Callable[[str], None] = lambda policy: None,
    ) -> None:
        self.upstreams = upstreams
        self.buckets = buckets
        self.limits = limits
        self.trusted_proxies = trusted_proxies
        self.on_rate_limited = on_rate_limited

    async def handle(self, request: Request, proxy: Proxy) -> HTTPResponse:
        route = resolve(request.path)
        if route is None:
            raise NotFoundError("No route matches this path.")
        principal, auth_error = await _identify(request)

        policy, key = self._bucket_for(request, principal)
        decision = await self.buckets.take(key, policy)
        if not decision.allowed:
            self.on_rate_limited(policy.name)
            raise RateLimitedError(decision.retry_after_s, headers=decision.headers(policy))

        if route.access_for(request.method) is Access.AUTHENTICATED and principal is None:
            raise auth_error or UnauthenticatedError()
        response = await proxy.forward(request, self.upstreams[route.upstream])
        response.headers.update(decision.headers(policy))
        return response

    def _bucket_for(self, request: Request, principal: Principal | None) -> tuple[Policy, str]:
        peer = request.conn_info.client_ip if request.conn_info else ""
        ip = client_ip(peer, request.headers.get("x-forwarded-for"), self.trusted_proxies)
        if request.method == "POST" and request.path.rstrip("/") == LOGIN_PATH:
            # Password guessing is limited per client address, whoever it claims to be.
            return self.limits.login, f"login:ip:{ip}"
        if principal is not None:
            return self.limits.default, f"sub:{principal.subject}"
        return self.limits.default, f"ip:{ip}"


async def _identify(request: Request) -> tuple[Principal | None, UnauthenticatedError | None]:
    """The caller if a valid token was sent; else None and why (raised only where required)."""
    if "authorization" not in request.headers:
        return None, None
    try:
        return await authenticate(request), None
    except UnauthenticatedError as error:
        return None, error
