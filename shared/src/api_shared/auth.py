"""Bearer-token verification, used the same way by the gateway and every service.

The rules are docs/api.md#authentication.

Two kinds of bearer credential arrive: access tokens (JWTs, verified here by signature) and
API keys (``ak_live_…``, opaque: only users-service, which stores their hashes, can say whose
a key is and what it may do). ``authenticate`` tells them apart by the prefix and hands a key
to the context's ``api_keys`` resolver (users-service's own table there, a question to
users-service everywhere else: api_shared.standing). A key's principal carries its scopes,
which every route checks with ``require_scope``; an access token's carries none and may do
whatever its account may.

Only EdDSA (Ed25519) tokens signed by a published key are accepted; ``exp``, ``iss``,
``aud`` and ``sub`` are required. Successful verifications are cached by the exact token
string until the token expires, so a client reusing its token pays a dictionary lookup;
a tampered token is a different string and never hits the cache. A cached verdict holds only
while its signing key is still published: a key withdrawn from the JWKS takes its tokens'
verdicts with it at the next refresh (at most ``DEFAULT_REFRESH_INTERVAL_S`` later).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

import aiohttp
import jwt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from sanic import Request

from api_shared.background import BackgroundTask
from api_shared.errors import ForbiddenError, UnauthenticatedError
from api_shared.http import FAILURES, HttpSession
from api_shared.settings import TokenSettings

logger = logging.getLogger(__name__)

ALGORITHM = "EdDSA"
MAX_TOKEN_BYTES = 4096  # ours are ~400 bytes; a huge token is an attack, not a credential
MAX_LEEWAY_S = 30
REQUIRED_CLAIMS = ("exp", "iss", "aud", "sub")
DEFAULT_REFRESH_INTERVAL_S = 300.0  # a withdrawn key is trusted at most this long
RETRY_TIMER_AFTER_FAILURE_S = 5.0
JWKS_TIMEOUT_S = 3.0  # one fetch of the JWKS, whatever the session's own timeout


# The roles a token's ``role`` claim names: users-service issues and stores them (Tortoise's
# CharEnumField), every verifier reads them. A comment, not a docstring: pydantic would
# publish a docstring as the schema's description in users-service's OpenAPI document.
class Role(StrEnum):
    CUSTOMER = "customer"
    ADMIN = "admin"


# The scopes an API key may be given (docs/api.md#api-keys): the contract's vocabulary, like
# Role. users-service decides who may grant which; each service decides which one a route
# needs. A key's scopes only narrow what its owner's role allows, never widen it.
class Scope(StrEnum):
    USERS_READ = "users:read"
    USERS_WRITE = "users:write"
    ORDERS_READ = "orders:read"
    ORDERS_WRITE = "orders:write"
    WEBHOOKS_MANAGE = "webhooks:manage"
    EVENTS_READ = "events:read"
    API_KEYS_READ = "api-keys:read"
    API_KEYS_WRITE = "api-keys:write"


# ``ak_live_`` and 43 base64url characters (256 random bits). Checked before any lookup, so
# that garbage costs nobody a question to users-service.
API_KEY_PREFIX = "ak_"
API_KEY_PATTERN = re.compile(r"ak_live_[A-Za-z0-9_-]{43}")


def is_api_key(token: str) -> bool:
    """Whether a bearer credential claims to be an API key (it may still be malformed)."""
    return token.startswith(API_KEY_PREFIX)


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling, as the verified token (or users-service, for an API key) says."""

    subject: str
    role: str
    # The session (refresh-token family) the token was issued for; users-service checks that
    # it is still open. Other services do not: access tokens stay stateless for them.
    session_id: str | None = None
    # For an API key: its id and its scopes. None for an access token, which is a person's
    # login and may do whatever the account may.
    api_key_id: str | None = None
    scopes: frozenset[str] | None = None
    # When an access token stops being valid (its ``exp``, Unix seconds): a long-lived
    # response such as an event stream ends then. None for an API key, which has no ``exp``.
    # Not part of who the caller is: two tokens of one login compare equal.
    expires_at: float | None = field(default=None, compare=False)
    # When the person behind an access token last proved who they are (its ``auth_time``,
    # OIDC's claim, Unix seconds): their login, kept through every refresh of its session.
    # What needs a recent login (minting an API key) reads it. None for an API key, and for
    # a token issued without the claim.
    auth_time: float | None = field(default=None, compare=False)

    @property
    def is_admin(self) -> bool:
        return self.role == Role.ADMIN

    @property
    def is_api_key(self) -> bool:
        return self.api_key_id is not None

    def allows(self, scope: str) -> bool:
        """Whether the credential covers ``scope`` (an access token covers every scope)."""
        return self.scopes is None or scope in self.scopes


class MissingScopeError(ForbiddenError):
    """403 for an API key without the scope a route needs, named in the message and in the
    ``WWW-Authenticate`` challenge (RFC 6750 §3.1, ``insufficient_scope``)."""

    def __init__(self, scope: str) -> None:
        super().__init__(
            f"This API key lacks the scope '{scope}'.",
            headers={"WWW-Authenticate": f'Bearer error="insufficient_scope", scope="{scope}"'},
        )
        self.scope = scope


def require_scope(principal: Principal, scope: str) -> Principal:
    """``principal`` when its credential covers ``scope``; MissingScopeError otherwise."""
    if not principal.allows(scope):
        raise MissingScopeError(scope)
    return principal


def require_person(principal: Principal, message: str) -> Principal:
    """``principal`` when it is a person's login, not an API key: for what a key never does
    (sessions, credentials, whatever needs a password). 403 FORBIDDEN with ``message``."""
    if principal.is_api_key:
        raise ForbiddenError(message)
    return principal


class KeySource(Protocol):
    """Where verification keys come from, by ``kid``."""

    async def get(self, kid: str) -> Ed25519PublicKey | None: ...

    def still_trusts(self, kid: str) -> bool:
        """Whether ``kid`` is published and known to be current: checked, without I/O, by
        every cached verification (False sends the verifier back to ``get``)."""
        ...


def public_keys_from_jwks(jwks: Any) -> dict[str, Ed25519PublicKey]:
    """The Ed25519 keys of a JWKS document, by ``kid``; other key types are ignored.

    ValueError when ``jwks`` is not a JWKS document at all (not an object with a ``keys``
    array): a wrong URL or a proxy's error page must not be mistaken for "no keys".
    """
    entries = jwks.get("keys") if isinstance(jwks, Mapping) else None
    if not isinstance(entries, list):
        raise ValueError("not a JWKS document")
    keys: dict[str, Ed25519PublicKey] = {}
    for entry in entries:
        if (
            not isinstance(entry, dict)
            or entry.get("kty") != "OKP"
            or entry.get("crv") != "Ed25519"
        ):
            continue
        kid = entry.get("kid")
        try:
            key = jwt.PyJWK(entry, algorithm=ALGORITHM).key
        except jwt.PyJWTError:
            logger.warning("skipping an unusable key in the JWKS", extra={"kid": kid})
            continue
        if isinstance(kid, str) and isinstance(key, Ed25519PublicKey):
            keys[kid] = key
    return keys


class StaticKeySource:
    """Keys known up front: users-service's own, or tests'."""

    def __init__(self, keys: Mapping[str, Ed25519PublicKey]) -> None:
        self._keys = dict(keys)

    async def get(self, kid: str) -> Ed25519PublicKey | None:
        return self._keys.get(kid)

    def still_trusts(self, kid: str) -> bool:
        return kid in self._keys


class JwksKeySource:
    """Keys fetched from a JWKS URL: when an unknown ``kid`` appears, and on a timer.

    Refreshes for unknown ``kid``s happen at most once per ``min_refresh_s`` after a
    successful fetch, so a flood of tokens with made-up ``kid``s cannot turn into a flood of
    requests to users-service. After a failed fetch (users-service starting or restarting)
    the next attempt may come after ``retry_after_failure_s``: verification recovers as soon
    as the JWKS is back. Every ``refresh_interval_s`` the JWKS is fetched again anyway, so a
    key withdrawn from it stops being trusted: by ``keep_fresh()`` running as a background
    task, and by the first lookup after the interval for a process that runs none. A failed
    timed fetch keeps the keys it had (an outage of users-service must not refuse every
    token) and is retried ``RETRY_TIMER_AFTER_FAILURE_S`` later, trusting them meanwhile.

    Fetched through the process's one HTTP session (``api_shared.http.HttpSession``), open
    before the first fetch (see ``jwks_verifier``), each fetch within ``timeout_s``.
    """

    def __init__(
        self,
        url: str,
        http: HttpSession,
        *,
        refresh_interval_s: float = DEFAULT_REFRESH_INTERVAL_S,
        min_refresh_s: float = 5.0,
        retry_after_failure_s: float = 0.5,
        timeout_s: float = JWKS_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < refresh_interval_s <= DEFAULT_REFRESH_INTERVAL_S:
            raise ValueError(
                f"the JWKS refresh interval must be in (0, {DEFAULT_REFRESH_INTERVAL_S:g}] seconds"
            )
        self.url = url
        self.http = http
        self.refresh_interval_s = refresh_interval_s
        self.min_refresh_s = min_refresh_s
        self.retry_after_failure_s = retry_after_failure_s
        self.timeout = aiohttp.ClientTimeout(total=timeout_s)
        self.clock = clock
        self._keys: dict[str, Ed25519PublicKey] = {}
        self._next_fetch = float("-inf")  # before this, an unknown kid fetches nothing
        self._stale_at = float("-inf")  # from this on, the keys are fetched again
        self._lock = asyncio.Lock()

    async def get(self, kid: str) -> Ed25519PublicKey | None:
        now = self.clock()
        if now >= self._stale_at and now >= self._next_fetch and not self._lock.locked():
            await self.refresh()
        key = self._keys.get(kid)
        # A fetch in flight (the one at start-up, say) is waited for, not ignored: the token
        # may well be signed by a key it is about to bring.
        if key is None and (self._lock.locked() or self.clock() >= self._next_fetch):
            await self.refresh()
            key = self._keys.get(kid)
        return key

    def still_trusts(self, kid: str) -> bool:
        # Past the refresh time nothing is current: cached verdicts go back through ``get``,
        # whose first call fetches the JWKS again.
        return kid in self._keys and self.clock() < self._stale_at

    async def keep_fresh(self) -> None:
        """Fetch the JWKS now, then every ``refresh_interval_s`` (run it as a task).

        Each fetch comes a little before the keys go stale, so that cached verdicts never
        have to wait for one.
        """
        early = self.refresh_interval_s * 0.1
        while True:
            await self.refresh()
            next_refresh = self._stale_at - early
            if next_refresh <= self.clock():
                # The fetch failed: try again, but unhurried (a request bringing an unknown
                # kid still fetches at once, after retry_after_failure_s).
                next_refresh = self.clock() + min(
                    self.refresh_interval_s, RETRY_TIMER_AFTER_FAILURE_S
                )
            await asyncio.sleep(max(next_refresh, self._next_fetch) - self.clock())

    async def refresh(self) -> None:
        """Fetch the JWKS now (at most one fetch in flight); keep the old keys on failure."""
        async with self._lock:
            if self.clock() < self._next_fetch:
                return  # another task fetched while this one waited
            self._next_fetch = self.clock() + self.retry_after_failure_s
            try:
                async with self.http.session.get(
                    self.url, timeout=self.timeout, headers={"Accept": "application/json"}
                ) as response:
                    response.raise_for_status()
                    # Whatever its content type: the document itself is checked.
                    keys = public_keys_from_jwks(await response.json(content_type=None))
            except FAILURES as error:
                logger.warning(
                    "could not fetch the JWKS", extra={"url": self.url, "error": repr(error)}
                )
                # Keep trusting the keys already known a little longer, rather than making
                # every request wait on a users-service that does not answer.
                retry_at = self.clock() + min(self.refresh_interval_s, RETRY_TIMER_AFTER_FAILURE_S)
                self._stale_at = max(self._stale_at, retry_at)
                return
            withdrawn = sorted(self._keys.keys() - keys.keys())
            if withdrawn:
                logger.info("keys withdrawn from the JWKS", extra={"kids": withdrawn})
            self._keys = keys
            self._next_fetch = self.clock() + self.min_refresh_s
            self._stale_at = self.clock() + self.refresh_interval_s


class TokenVerifier:
    """Verifies bearer tokens and caches the successful verifications."""

    def __init__(
        self,
        keys: KeySource,
        *,
        issuer: str,
        audience: str,
        leeway_s: int = MAX_LEEWAY_S,
        cache_size: int = 10_000,
    ) -> None:
        if not 0 <= leeway_s <= MAX_LEEWAY_S:
            raise ValueError(f"leeway must be between 0 and {MAX_LEEWAY_S} seconds")
        self.keys = keys
        self.issuer = issuer
        self.audience = audience
        self.leeway_s = leeway_s
        self.cache_size = cache_size
        # token → (principal, expiry, kid of the key that signed it)
        self._cache: OrderedDict[str, tuple[Principal, float, str]] = OrderedDict()
        self._cached_kids: set[str] = set()  # every kid with verdicts in the cache (or once)

    async def verify(self, token: str) -> Principal:
        """The token's principal, or UNAUTHENTICATED."""
        cached = self._cache.get(token)
        if cached is not None:
            principal, expires_at, kid = cached
            if self.keys.still_trusts(kid) and time.time() <= expires_at + self.leeway_s:
                return principal
            del self._cache[token]
        principal, expires_at, kid = await self._verify_uncached(token)
        self._remember(token, principal, expires_at, kid)
        self._forget_withdrawn_keys()
        return principal

    def _forget_withdrawn_keys(self) -> None:
        """Drop the verdicts of keys no longer published (looked at once per new verdict).

        Costs one lookup per signing key in use (one or two) unless a key was withdrawn.
        """
        withdrawn = {kid for kid in self._cached_kids if not self.keys.still_trusts(kid)}
        if withdrawn:
            self._cached_kids -= withdrawn
            for token in [t for t, (_, _, kid) in self._cache.items() if kid in withdrawn]:
                del self._cache[token]

    async def _verify_uncached(self, token: str) -> tuple[Principal, float, str]:
        if len(token) > MAX_TOKEN_BYTES:
            raise _invalid("The token is too large.")
        if not token.isascii():
            # A JWT is ASCII; bytes that are not UTF-8 reach us as surrogates, which the JWT
            # library cannot even encode (it would raise UnicodeEncodeError, not a JWT error).
            raise _invalid("The token is malformed.")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise _invalid("The token is malformed.") from None
        if header.get("alg") != ALGORITHM:
            raise _invalid("The token's algorithm is not accepted.")
        kid = header.get("kid")
        if not isinstance(kid, str):
            raise _invalid("The token was not signed by a known key.")
        key = await self.keys.get(kid)
        if key is None:
            raise _invalid("The token was not signed by a known key.")
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[ALGORITHM],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway_s,
                options={"require": list(REQUIRED_CLAIMS)},
            )
        except jwt.ExpiredSignatureError:
            raise _invalid("The token has expired.") from None
        except jwt.PyJWTError:
            raise _invalid("The token is not valid.") from None
        subject, role, expires_at = claims.get("sub"), claims.get("role"), claims.get("exp")
        if not (isinstance(subject, str) and subject and isinstance(role, str)):
            raise _invalid("The token's claims are not valid.")
        if not isinstance(expires_at, int | float):
            raise _invalid("The token's claims are not valid.")
        session_id = claims.get("sid")
        if session_id is not None and not (isinstance(session_id, str) and session_id):
            raise _invalid("The token's claims are not valid.")
        auth_time = claims.get("auth_time")
        if auth_time is not None and (
            isinstance(auth_time, bool) or not isinstance(auth_time, int | float)
        ):
            raise _invalid("The token's claims are not valid.")
        principal = Principal(
            subject=subject,
            role=role,
            session_id=session_id,
            expires_at=float(expires_at),
            auth_time=None if auth_time is None else float(auth_time),
        )
        return principal, float(expires_at), kid

    def _remember(self, token: str, principal: Principal, expires_at: float, kid: str) -> None:
        self._cache[token] = (principal, expires_at, kid)
        self._cached_kids.add(kid)
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)  # the oldest entry goes first


def _invalid(message: str) -> UnauthenticatedError:
    return UnauthenticatedError(message, token_sent=True)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None when there is no header.

    A header that is present but not a well-formed Bearer credential is UNAUTHENTICATED.
    """
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or " " in token:
        raise UnauthenticatedError("The Authorization header must be 'Bearer <token>'.")
    return token


def jwks_verifier(
    settings: TokenSettings,
    http: HttpSession,
    *,
    refresh_interval_s: float = DEFAULT_REFRESH_INTERVAL_S,
) -> tuple[TokenVerifier, BackgroundTask]:
    """A verifier of users-service's tokens by its JWKS (fetched through ``http``), and the
    resource that fetches it from the start and then every ``refresh_interval_s``.

    List ``http`` before the refresh among the context's resources: the session must be
    open for the first fetch. That fetch warms the key cache without delaying start-up
    (users-service may start later); a token with an unknown ``kid`` fetches again anyway.
    """
    keys = JwksKeySource(settings.jwks_url, http, refresh_interval_s=refresh_interval_s)
    verifier = TokenVerifier(keys, issuer=settings.jwt_issuer, audience=settings.jwt_audience)
    return verifier, BackgroundTask("jwks_refresh", keys.keep_fresh)


class Authenticating(Protocol):
    """A service's context whose handlers call ``authenticate``: the app's one verifier.

    A context that accepts API keys also has ``api_keys`` (an ``ApiKeyResolver``); one
    without it answers every key 401.
    """

    @property
    def verifier(self) -> TokenVerifier: ...


class ApiKeyResolver(Protocol):
    """Whose an API key is and what it may do, now: users-service knows."""

    async def resolve_api_key(self, key: str) -> Principal:
        """The key's principal (its owner's current role, its scopes); UNAUTHENTICATED for a
        key that is unknown, revoked or expired, FORBIDDEN when its owner is suspended."""
        ...


async def _api_key_principal(context: object, key: str) -> Principal:
    resolver: ApiKeyResolver | None = getattr(context, "api_keys", None)
    if resolver is None:
        raise _invalid("API keys are not accepted here.")
    if API_KEY_PATTERN.fullmatch(key) is None:
        raise _invalid("The API key is malformed.")
    return await resolver.resolve_api_key(key)


async def authenticate(request: Request) -> Principal:
    """The caller, from the request's own bearer token; UNAUTHENTICATED without a valid one."""
    principal: Principal | None = getattr(request.ctx, "principal", None)
    if principal is not None:
        return principal
    credentials: list[str] = request.headers.getall("authorization", [])
    if len(credentials) > 1:
        # Which one to believe would be ambiguous (a proxy may keep the other): refuse both.
        raise UnauthenticatedError("Send a single Authorization header.")
    token = bearer_token(credentials[0] if credentials else None)
    if token is None:
        raise UnauthenticatedError()
    # The context's verifier (api_shared.context.install_context put the context there).
    context: Authenticating = request.app.ctx.context
    if is_api_key(token):
        principal = await _api_key_principal(context, token)
    else:
        principal = await context.verifier.verify(token)
    request.ctx.principal = principal
    return principal


async def optional_principal(request: Request) -> Principal | None:
    """The caller when a token is sent (it must then be valid), else None: for public routes."""
    if request.headers.get("authorization") is None:
        return None
    return await authenticate(request)
