"""What the gateway does with each public request, in order:

resolve the route → identify the caller → take rate-limit tokens → require a token where the
route does → forward to a replica → return the upstream's answer with limit headers.

Every request takes a token from its client address's coarse bucket and one from its caller's
bucket (the token's subject, else the address), so that holding many tokens buys no more
than the address's budget. Some requests draw from stricter buckets instead of the caller's:

- logins (``POST /api/auth/token``): per address; then, charged only when the login failed
  (users-service answered 401), per (account, address) and per account with a higher
  ceiling: guessing is bounded per address *and* per account, while one attacker address
  cannot use up the account's budget and lock its owner out;
- sign-ups and password changes (each an expensive Argon2 hash): per address;
- refreshes (``POST /api/auth/refresh``): per address, and per session (the one the refresh
  token names), however many addresses send them.
"""

from __future__ import annotations

import hashlib
import re
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
    ValidationFailedError,
)
from api_shared.refresh_tokens import refresh_token_session
from api_shared.validation import read_json_object
from gateway.clientip import IPNetwork, address_key, client_ip, forwarded_for, peer_of
from gateway.proxy import Proxy
from gateway.ratelimit import Buckets, Decision, Policy
from gateway.routing import Access, resolve
from gateway.settings import Settings
from gateway.upstreams import Upstream

LOGIN_PATH = "/api/auth/token"
REFRESH_PATH = "/api/auth/refresh"
SIGNUP_PATH = "/api/users"
_ONE_USER_PATH = re.compile(r"/api/users/[^/]+/?")

MAX_EMAIL_LENGTH = 320  # RFC 5321: 64 (local part) + 1 + 255 (domain); longer is no address
MAX_LABEL_LENGTH = 63  # RFC 1035 §2.3.4

# Full stops IDNA reads as "." in a domain (after NFKC, U+FF0E and U+FF61 are "." and U+3002).
_IDEOGRAPHIC_FULL_STOP = "\u3002"

Bucket = tuple[Policy, str]


@dataclass(frozen=True, slots=True)
class Limits:
    default: Policy  # per caller: the token's subject, else the client address
    address: Policy  # per client address, every request
    login: Policy  # logins per client address
    login_account: Policy  # failed logins per (account, address)
    login_account_ceiling: Policy  # failed logins per account, from every address
    signup: Policy  # sign-ups and password changes per client address
    refresh: Policy  # refreshes per client address
    refresh_session: Policy  # refreshes per session named by the body's refresh token

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        """The policies the settings describe (docs/api.md#limits)."""
        return cls(
            default=Policy("default", settings.rate_limit_rps, settings.rate_limit_burst),
            address=Policy("address", settings.address_rps, settings.address_burst),
            login=_per_minute("login", settings.login_rate_limit_per_minute),
            login_account=_per_minute("login-account", settings.login_account_per_minute),
            login_account_ceiling=_per_minute(
                "login-account-ceiling", settings.login_account_ceiling
            ),
            signup=_per_minute("signup", settings.signup_rate_limit_per_minute),
            refresh=_per_minute("refresh", settings.refresh_rate_limit_per_minute),
            refresh_session=_per_minute(
                "refresh-session", settings.refresh_session_rate_limit_per_minute
            ),
        )


def _per_minute(name: str, per_minute: int) -> Policy:
    """``per_minute`` requests at once, refilled evenly over the minute."""
    return Policy(name, per_minute / 60, per_minute)


class Dispatcher:
    def __init__(
        self,
        upstreams: dict[str, Upstream],
        buckets: Buckets,
        limits: Limits,
        trusted_proxies: tuple[IPNetwork, ...],
        on_rate_limited: Callable[[str], None] = lambda policy: None,
        on_client: Callable[[str], None] = lambda address: None,
    ) -> None:
        self.upstreams = upstreams
        self.buckets = buckets
        self.limits = limits
        self.trusted_proxies = trusted_proxies
        self.on_rate_limited = on_rate_limited
        self.on_client = on_client  # sees every client address (the start-up proxy check)

    async def handle(self, request: Request, proxy: Proxy) -> HTTPResponse:
        route = resolve(request.path)
        # Named for metrics, traces and the access line (never the path: unbounded).
        request.ctx.route_template = route.template if route is not None else "unmatched"
        if route is None:
            raise NotFoundError("No route matches this path.")
        principal, auth_error = await _identify(request)
        ip = client_ip(peer_of(request), forwarded_for(request), self.trusted_proxies)
        request.ctx.client_address = ip  # the access line's
        self.on_client(ip)
        address = address_key(ip)

        taken = [
            await self._take(self.limits.address, f"addr:{address}"),
            await self._take(*self._bucket_for(request, principal, address)),
        ]
        session = self._refresh_session_bucket(request)
        if session is not None:
            taken.append(await self._take(*session))
        if route.access_for(request.method) is Access.AUTHENTICATED and principal is None:
            raise auth_error or UnauthenticatedError()
        charged = self._failed_login_buckets(request, address)
        for done, bucket in enumerate(charged):
            try:
                taken.append(await self._take(*bucket))
            except RateLimitedError:
                await self._give_back(charged[:done])
                raise
        try:
            response = await proxy.forward(request, self.upstreams[route.upstream])
        except BaseException:
            await self._give_back(charged)
            raise
        if response.status != 401:
            await self._give_back(charged)  # only failed logins count against the account
        policy, decision = min(taken, key=lambda pair: pair[1].remaining)
        response.headers.update(decision.headers(policy))
        return response

    async def _take(self, policy: Policy, key: str) -> tuple[Policy, Decision]:
        """Take a token from ``key``'s bucket, or RATE_LIMITED."""
        decision = await self.buckets.take(key, policy)
        if not decision.allowed:
            self.on_rate_limited(policy.name)
            raise RateLimitedError(decision.retry_after_s, headers=decision.headers(policy))
        return policy, decision

    async def _give_back(self, buckets: list[Bucket]) -> None:
        for policy, key in buckets:
            await self.buckets.give_back(key, policy)

    def _bucket_for(self, request: Request, principal: Principal | None, address: str) -> Bucket:
        if _is_login(request):
            # Password guessing is limited per client address, whoever it claims to be.
            return self.limits.login, f"login:ip:{address}"
        if _is_post_to(request, REFRESH_PATH):
            return self.limits.refresh, f"refresh:ip:{address}"
        if _sets_a_password(request):
            return self.limits.signup, f"signup:ip:{address}"
        if principal is not None:
            return self.limits.default, f"sub:{principal.subject}"
        return self.limits.default, f"ip:{address}"

    def _failed_login_buckets(self, request: Request, address: str) -> list[Bucket]:
        """The buckets a failed login is charged to; none for other requests."""
        if not _is_login(request):
            return []
        account = login_account_key(request)
        if account is None:
            return []
        pair = hashlib.sha256(f"{account}\n{address}".encode()).hexdigest()
        return [
            (self.limits.login_account, f"login:account-address:{pair}"),
            (self.limits.login_account_ceiling, f"login:account:{account}"),
        ]

    def _refresh_session_bucket(self, request: Request) -> Bucket | None:
        """The bucket of the session a refresh names; None for other requests."""
        if not _is_post_to(request, REFRESH_PATH):
            return None
        session = refresh_session_key(request)
        return (self.limits.refresh_session, session) if session else None


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


def _sets_a_password(request: Request) -> bool:
    """A sign-up, or a change of a user whose body names a new password."""
    if request.method == "POST":
        return request.path.rstrip("/") == SIGNUP_PATH
    if request.method not in ("PATCH", "PUT") or not _ONE_USER_PATH.fullmatch(request.path):
        return False
    try:
        return "password" in read_json_object(request)
    except MalformedJsonError:
        return False  # users-service refuses it without hashing anything


def login_account_key(request: Request) -> str | None:
    """The hex digest naming the account a login names; None without one.

    The body is read as users-service reads it (same parser, already bounded by
    MAX_BODY_BYTES); a body that is not a JSON object, or has no string ``email``, names no
    account (users-service refuses it without checking any password). An email too long to
    be an address is VALIDATION_FAILED.
    """
    try:
        body = read_json_object(request)
    except MalformedJsonError:
        return None
    email = body.get("email")
    if not isinstance(email, str):
        return None
    digest = hashlib.sha256(canonical_email(email).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def canonical_email(email: str) -> str:
    """One spelling for every way of writing an address users-service reads as one account.

    users-service normalises with email-validator: NFC, lower case, and UTS #46 for the domain,
    which maps full-width letters and ideographic full stops to ASCII and decodes punycode
    (``ADA@EXAMPLE.COM`` written with full-width letters is ``ada@example.com``). Strip and
    lower-case alone would let an attacker spell one address in thousands of ways, each with
    a fresh bucket. This folds more than users-service does (NFKC, casefold): two accounts
    sharing a bucket is harmless, one account with many buckets is not.

    An email over MAX_EMAIL_LENGTH characters is VALIDATION_FAILED before any of this:
    folding and punycode decoding cost time in proportion to (or worse than) the length.
    """
    if len(email) > MAX_EMAIL_LENGTH:
        reason = f"must be at most {MAX_EMAIL_LENGTH} characters"
        raise ValidationFailedError(f"email {reason}", fields={"email": reason})
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
