"""A service that trusts users-service about its callers: its tokens, verified by the keys it
publishes (api_shared.auth), and its word on a caller's standing (api_shared.standing), both
asked through the process's one HTTP session, wired once for every such service.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from api_shared.auth.api_keys import ApiKeyResolver
from api_shared.auth.verifier import TokenConfig, TokenVerifier, jwks_verifier
from api_shared.context import Resource
from api_shared.http import HttpSession, Replicas
from api_shared.standing import CallerCheck, CallerConfirmation, users_service


class TrustSettings(TokenConfig, Protocol):
    """What trusting users-service reads of a service's settings: ``TokenSettings`` and
    ``StandingSettings`` (api_shared.standing) mixed in."""

    @property
    def users_service_urls(self) -> Sequence[str]: ...

    @property
    def standing_cache_s(self) -> float: ...


class TrustsUsersService:
    """A base of the context of a service that trusts users-service: API keys are
    users-service's too, asked through ``standing`` (api_shared.auth.request reads
    ``api_keys``), answers kept as long."""

    __slots__ = ()
    standing: CallerConfirmation  # a field of the context

    @property
    def api_keys(self) -> ApiKeyResolver:
        return self.standing


@dataclass(frozen=True, slots=True)
class UsersServiceTrust:
    verifier: TokenVerifier  # users-service's tokens, by its JWKS, unless a test passes its own
    standing: CallerConfirmation  # users-service's word on callers, unless a test passes its own
    replicas: Replicas  # users-service, for the service's own questions to it too
    # To start, in this order: the session first (the others call through it), then the
    # JWKS refresh; neither when nothing built here (or by the caller) calls through it.
    resources: tuple[Resource, ...]


def trust_users_service(
    settings: TrustSettings,
    http: HttpSession,
    *,
    verifier: TokenVerifier | None = None,
    standing: CallerConfirmation | None = None,
    http_used: bool = False,
) -> UsersServiceTrust:
    """The verifier, the caller check (answers kept ``STANDING_CACHE_S``) and users-service's
    replicas, through ``http``; a given ``verifier`` or ``standing`` is used as it is (tests
    pass fakes). ``http_used``: the service's own parts call through ``http`` too, so it is
    started even when nothing here does."""
    replicas = users_service(http, settings.users_service_urls)
    resources: list[Resource] = []
    if http_used or verifier is None or standing is None:
        resources.append(http)
    if verifier is None:
        verifier, key_refresh = jwks_verifier(settings, http)
        resources.append(key_refresh)
    if standing is None:
        standing = CallerCheck(replicas, cache_s=settings.standing_cache_s)
    return UsersServiceTrust(verifier, standing, replicas, tuple(resources))
