"""The sessions' part of the service's wiring: the rules on their store, the purge of ended
sessions, and the verifier of the service's own tokens."""

from __future__ import annotations

from dataclasses import dataclass

from api_shared.auth import StaticKeySource, TokenVerifier
from api_shared.background import Periodic
from users_service.budgets import Throttle
from users_service.sessions.keys import SigningKeys
from users_service.sessions.ports import UserReader
from users_service.sessions.repository import SessionRepository
from users_service.sessions.services import SessionService
from users_service.sessions.tokens import TokenIssuer
from users_service.settings import Settings


@dataclass(frozen=True, slots=True)
class SessionsPart:
    sessions: SessionService
    verifier: TokenVerifier  # checks tokens against the keys the service publishes
    purge: Periodic  # a resource: deletes what has ended


def wire_sessions(
    settings: Settings, keys: SigningKeys, users: UserReader, throttle: Throttle
) -> SessionsPart:
    issuer = TokenIssuer(
        keys,
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
        ttl_s=settings.access_token_ttl_s,
    )
    sessions = SessionService(
        SessionRepository(),
        users,
        issuer,
        throttle,
        refresh_ttl_s=settings.refresh_token_ttl_s,
        max_lifetime_s=settings.session_max_lifetime_s,
    )
    return SessionsPart(
        sessions=sessions,
        # The service checks its own tokens against the keys it publishes: no HTTP to itself.
        verifier=TokenVerifier(
            StaticKeySource(keys.public_keys),
            issuer=settings.jwt_issuer,
            audience=settings.jwt_audience,
        ),
        # Every replica may purge: deleting what has ended is idempotent.
        purge=Periodic("purge_sessions", sessions.purge, settings.session_purge_interval_s),
    )
