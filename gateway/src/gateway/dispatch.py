"""What the gateway does with each public request, in order:

resolve the route → identify the caller → take a rate-limit token → require a token where
the route does → forward to a replica → return the upstream's answer with limit headers.

Logins (``POST /api/auth/token``) take two tokens: one from their client address's bucket,
then one from the bucket of the account they name, so that password guessing is bounded
per address *and* per account, however many addresses an attacker spreads it over.
Refreshes (``POST /api/auth/refresh``) likewise: per address, then per session (the one the
refresh token names).
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from sanic import Request
from sanic.response import HTTPResponse

from api_shared.auth import Principal, authenticate
from api_shared.errors import (
    MalformedJsonError,
    NotFoundError,
    RateLimitedError,
    UnauthenticatedError,
)
from api_shared.refresh_tokens import refresh_token_session
from api_shared.validation import read_json_object
from gateway.clientip import IPNetwork, client_ip
from gateway.proxy import Proxy
from gateway.ratelimit import Buckets, Decision, Policy
from gateway.routing import Access, resolve
from gateway.upstreams import Upstream

LOGIN_PATH = "/api/auth/token"
REFRESH_PATH = "/api/auth/refresh"

MAX_LABEL_LENGTH = 63  # RFC 1035 §2.3.4

# Full stops IDNA reads as "." in a domain (after NFKC, U+FF0E and U+FF61 are "." and U+3002).
_IDEOGRAPHIC_FULL_STOP = "\u3002"


@dataclass(frozen=True, slots=True)
class Limits:
    default: Policy
    login: Policy  # per client address
    login_account: Policy  # per account named in the login's body
    refresh: Policy  # per client address
    refresh_session: Policy  # per session named by the refresh token in the body


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
        policy, decision = await self._take(policy, key)
        second = self._second_bucket_for(request)
        if second is not None:
            policy, decision = min(
                (policy, decision),
                await self._take(*second),
                key=lambda taken: taken[1].remaining,
            )

        if route.access_for(request.method) is Access.AUTHENTICATED and principal is None:
            raise auth_error or UnauthenticatedError()
        response = await proxy.forward(request, self.upstreams[route.upstream])
        response.headers.update(decision.headers(policy))
        return response

    async def _take(self, policy: Policy, key: str) -> tuple[Policy, Decision]:
        """Take a token from ``key``'s bucket, or RATE_LIMITED."""
        decision = await self.buckets.take(key, policy)
        if not decision.allowed:
            self.on_rate_limited(policy.name)
            raise RateLimitedError(decision.retry_after_s, headers=decision.headers(policy))
        return policy, decision

    def _bucket_for(self, request: Request, principal: Principal | None) -> tuple[Policy, str]:
        peer = request.conn_info.client_ip if request.conn_info else ""
        ip = client_ip(peer, request.headers.get("x-forwarded-for"), self.trusted_proxies)
        if _is_login(request):
            # Password guessing is limited per client address, whoever it claims to be.
            return self.limits.login, f"login:ip:{ip}"
        if _is_post_to(request, REFRESH_PATH):
            return self.limits.refresh, f"refresh:ip:{ip}"
        if principal is not None:
            return self.limits.default, f"sub:{principal.subject}"
        return self.limits.default, f"ip:{ip}"

    def _second_bucket_for(self, request: Request) -> tuple[Policy, str] | None:
        """The per-account bucket of a login, the per-session bucket of a refresh."""
        if _is_login(request):
            account = login_account_key(request)
            return (self.limits.login_account, account) if account else None
        if _is_post_to(request, REFRESH_PATH):
            session = refresh_session_key(request)
            return (self.limits.refresh_session, session) if session else None
        return None


def _is_login(request: Request) -> bool:
    return _is_post_to(request, LOGIN_PATH)


def _is_post_to(request: Request, path: str) -> bool:
    return request.method == "POST" and request.path.rstrip("/") == path


def refresh_session_key(request: Request) -> str | None:
    """The bucket of the session a refresh names: ``refresh:session:<id>``; None without one.

    A token that is not well-formed names no session (users-service refuses it unread).
    """
    try:
        body = read_json_object(request)
    except MalformedJsonError:
        return None
    token = body.get("refreshToken")
    session = refresh_token_session(token) if isinstance(token, str) else None
    return f"refresh:session:{session.hex}" if session else None


def login_account_key(request: Request) -> str | None:
    """The bucket of the account a login names: ``login:account:<sha256>``; None without one.

    The body is read as users-service reads it (same parser, already bounded by
    MAX_BODY_BYTES); a body that is not a JSON object, or has no string ``email``, names no
    account (users-service refuses it without checking any password).
    """
    try:
        body = read_json_object(request)
    except MalformedJsonError:
        return None
    email = body.get("email")
    if not isinstance(email, str):
        return None
    digest = hashlib.sha256(canonical_email(email).encode("utf-8", "surrogatepass"))
    return f"login:account:{digest.hexdigest()}"


def canonical_email(email: str) -> str:
    """One spelling for every way of writing an address users-service reads as one account.

    users-service normalises with email-validator: NFC, lower case, and UTS #46 for the domain,
    which maps full-width letters and ideographic full stops to ASCII and decodes punycode
    (``ADA@EXAMPLE.COM`` written with full-width letters is ``ada@example.com``). Strip and
    lower-case alone would let an attacker spell one address in thousands of ways, each with
    a fresh bucket. This folds more than users-service does (NFKC, casefold): two accounts
    sharing a bucket is harmless, one account with many buckets is not.
    """
    folded = _fold(email.strip())
    local, at, domain = folded.rpartition("@")
    if not at:
        return folded
    labels = domain.replace(_IDEOGRAPHIC_FULL_STOP, ".").split(".")
    return f"{local}@{'.'.join(_fold(_from_punycode(label)) for label in labels)}"


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def _from_punycode(label: str) -> str:
    # Decoding is quadratic; a label longer than DNS allows is no account's domain anyway.
    if not label.startswith("xn--") or len(label) > MAX_LABEL_LENGTH:
        return label
    try:
        return label[4:].encode("ascii").decode("punycode")
    except (UnicodeError, ValueError):
        return label


async def _identify(request: Request) -> tuple[Principal | None, UnauthenticatedError | None]:
    """The caller if a valid token was sent; else None and why (raised only where required)."""
    if "authorization" not in request.headers:
        return None, None
    try:
        return await authenticate(request), None
    except UnauthenticatedError as error:
        return None, error
