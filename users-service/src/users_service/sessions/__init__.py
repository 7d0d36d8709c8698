"""Sessions and tokens: login sessions with refresh-token rotation, the access tokens and the
keys that sign them, and the caller check behind every token (``/api/auth``, the JWKS)."""

from users_service.sessions.callers import caller_of, client_of
from users_service.sessions.keys import SigningKeys, load_signing_keys
from users_service.sessions.ports import Client, SessionTokens, Standing, UserReader
from users_service.sessions.routes import auth, jwks
from users_service.sessions.services import SessionService, refuse_suspended, utc_now
from users_service.sessions.wiring import SessionsPart, wire_sessions

__all__ = [
    "Client",
    "SessionService",
    "SessionTokens",
    "SessionsPart",
    "SigningKeys",
    "Standing",
    "UserReader",
    "auth",
    "caller_of",
    "client_of",
    "jwks",
    "load_signing_keys",
    "refuse_suspended",
    "utc_now",
    "wire_sessions",
]
