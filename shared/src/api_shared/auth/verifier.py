"""Access tokens verified: EdDSA JWTs signed by a published key, with ``exp``, ``iss``,
``aud`` and ``sub`` (docs/api.md#authentication).

Successful verifications are cached by the exact token string until the token expires, so a
client reusing its token pays a dictionary lookup; a tampered token is a different string and
never hits the cache. A cached verdict holds only while its signing key is still published:
a key withdrawn from the JWKS takes its tokens' verdicts with it at the next refresh
(api_shared.auth.keys).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Protocol

import jwt

from api_shared.auth.keys import ALGORITHM, DEFAULT_REFRESH_INTERVAL_S, JwksKeySource, KeySource
from api_shared.auth.principal import Principal
from api_shared.background import BackgroundTask
from api_shared.errors import UnauthenticatedError
from api_shared.http import HttpSession

MAX_TOKEN_BYTES = 4096  # ours are ~400 bytes; a huge token is an attack, not a credential
MAX_LEEWAY_S = 30
REQUIRED_CLAIMS = ("exp", "iss", "aud", "sub")


class TokenConfig(Protocol):
    """What a verifier agrees on with users-service: ``api_shared.settings.TokenSettings``,
    or any settings that mix it in."""

    @property
    def jwt_issuer(self) -> str: ...

    @property
    def jwt_audience(self) -> str: ...

    @property
    def jwks_url(self) -> str: ...


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


def jwks_verifier(
    settings: TokenConfig,
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
