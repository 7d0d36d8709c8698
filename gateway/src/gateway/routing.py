"""The route table: which upstream serves a public path, whether it needs a token, and which
per-address budget its requests draw from instead of the caller's.

One place for every public route of the platform (docs/api.md#routes), the gateway's own
documents included (served by gateway.routes, never proxied). The gateway knows
routes and addresses, nothing of bodies or accounts: a budget that needs those (failed
logins per account, guesses at a current password, refreshes per session) is charged by
users-service, which knows them. Patterns allow any number of trailing slashes: the services'
router strips them all, so a path the gateway would read as another route cannot reach one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class Access(Enum):
    PUBLIC = "public"  # no token checked here (the service may still read one)
    AUTHENTICATED = "authenticated"  # a valid bearer token is required


@dataclass(frozen=True, slots=True)
class Route:
    pattern: re.Pattern[str]
    # How metrics, traces and logs name the route (bounded, unlike paths): URI-template-like,
    # ``{/path}`` being an optional rest of the path.
    template: str
    upstream: str
    access: Access
    # Methods that are public on an otherwise token-protected route (sign-up).
    public_methods: frozenset[str] = frozenset()
    # Methods whose requests draw from a per-address budget (a ``Limits`` policy's name)
    # instead of the caller's: logins, refreshes, sign-ups.
    charges: tuple[tuple[str, str], ...] = ()
    # Its GET answers are streams (Server-Sent Events): forwarded as they arrive, never
    # buffered, and without a total timeout (gateway.upstream.stream).
    streaming: bool = False

    def streams(self, method: str) -> bool:
        """Whether a ``method`` request's answer is forwarded as a stream."""
        return self.streaming and method == "GET"

    def access_for(self, method: str) -> Access:
        return Access.PUBLIC if method in self.public_methods else self.access

    def charge_for(self, method: str) -> str | None:
        """The per-address budget a ``method`` request draws from; None: the caller's."""
        for charged, policy in self.charges:
            if charged == method:
                return policy
        return None


def _route(
    regex: str,
    template: str,
    upstream: str,
    access: Access,
    public_methods: frozenset[str] = frozenset(),
    charges: tuple[tuple[str, str], ...] = (),
    *,
    streaming: bool = False,
) -> Route:
    return Route(re.compile(regex), template, upstream, access, public_methods, charges, streaming)


# The gateway's own public paths: the merged documents and the page that browses them.
OPENAPI_DOCUMENT, ASYNCAPI_DOCUMENT, DOCS_PAGE = "/openapi.json", "/asyncapi.json", "/docs"

# The per-address budgets of ``charges`` (gateway.pipeline.Limits).
LOGIN, REFRESH, SIGNUP = "login", "refresh", "signup"
RESET_REQUEST, ACCOUNT_TOKEN = "reset-request", "account-token"


USERS, ORDERS, BOOKS, WEBHOOKS = "users", "orders", "books", "webhooks"

ROUTES: tuple[Route, ...] = (
    # POST /api/users is public sign-up; users-service itself decides who may grant a role.
    _route(
        r"/api/users/*",
        "/api/users",
        USERS,
        Access.AUTHENTICATED,
        frozenset({"POST"}),
        charges=(("POST", SIGNUP),),
    ),
    _route(r"/api/users/.+", "/api/users/{path}", USERS, Access.AUTHENTICATED),
    # The token resource is public: logins and refreshes (OAuth 2's grants, which only the
    # body tells apart) both draw from the login budget per address, so a refresh sent there
    # never widens the budget of password guesses (docs/api.md#limits).
    _route(
        r"/api/auth/token/*", "/api/auth/token", USERS, Access.PUBLIC, charges=(("POST", LOGIN),)
    ),
    # Deprecated aliases (docs/api.md#deprecated-routes): refresh keeps its own budget until
    # it is removed; logout (by refresh token) is public; logout-all takes a token.
    _route(
        r"/api/auth/refresh/*",
        "/api/auth/refresh",
        USERS,
        Access.PUBLIC,
        charges=(("POST", REFRESH),),
    ),
    _route(r"/api/auth/logout/*", "/api/auth/logout", USERS, Access.PUBLIC),
    _route(r"/api/auth/logout-all/*", "/api/auth/logout-all", USERS, Access.AUTHENTICATED),
    # The caller's own sessions: all of them, the current one, or one by id.
    _route(
        r"/api/auth/sessions(/[^/]+)?/*", "/api/auth/sessions{/id}", USERS, Access.AUTHENTICATED
    ),
    _route(r"/api/auth(/.*)?", "/api/auth{/path}", USERS, Access.PUBLIC),
    # The caller's API keys: all of them, one by id, or the key presenting itself (current).
    _route(r"/api/api-keys(/[^/]+)?/*", "/api/api-keys{/id}", USERS, Access.AUTHENTICATED),
    # Email verification and password reset: public but for asking a new verification
    # message; each redemption of a mailed token, and each reset request, per address.
    _route(
        r"/api/email-verifications/*",
        "/api/email-verifications",
        USERS,
        Access.PUBLIC,
        charges=(("POST", ACCOUNT_TOKEN),),
    ),
    _route(
        r"/api/email-verification-requests/*",
        "/api/email-verification-requests",
        USERS,
        Access.AUTHENTICATED,
    ),
    _route(
        r"/api/password-reset-requests/*",
        "/api/password-reset-requests",
        USERS,
        Access.PUBLIC,
        charges=(("POST", RESET_REQUEST),),
    ),
    _route(
        r"/api/password-resets/*",
        "/api/password-resets",
        USERS,
        Access.PUBLIC,
        charges=(("POST", ACCOUNT_TOKEN),),
    ),
    _route(r"/\.well-known/jwks\.json", "/.well-known/jwks.json", USERS, Access.PUBLIC),
    _route(r"/orders(/.*)?", "/orders{/path}", ORDERS, Access.AUTHENTICATED),
    _route(r"/users/[^/]+/orders/*", "/users/{user_id}/orders", ORDERS, Access.AUTHENTICATED),
    _route(r"/graphql/*", "/graphql", BOOKS, Access.PUBLIC),
    # Endpoints and their deliveries; webhooks-service decides whose each one is.
    _route(r"/api/webhooks/*", "/api/webhooks", WEBHOOKS, Access.AUTHENTICATED),
    _route(
        r"/api/webhooks/[^/]+/secrets/*",
        "/api/webhooks/{id}/secrets",
        WEBHOOKS,
        Access.AUTHENTICATED,
    ),
    _route(
        r"/api/webhooks/[^/]+/deliveries/[^/]+/attempts/*",
        "/api/webhooks/{id}/deliveries/{deliveryId}/attempts",
        WEBHOOKS,
        Access.AUTHENTICATED,
    ),
    # Deprecated aliases of the two above (docs/api.md#deprecated-routes).
    _route(
        r"/api/webhooks/[^/]+/rotate-secret/*",
        "/api/webhooks/{id}/rotate-secret",
        WEBHOOKS,
        Access.AUTHENTICATED,
    ),
    _route(
        r"/api/webhooks/[^/]+/deliveries/[^/]+/replay/*",
        "/api/webhooks/{id}/deliveries/{deliveryId}/replay",
        WEBHOOKS,
        Access.AUTHENTICATED,
    ),
    _route(r"/api/webhooks/.+", "/api/webhooks/{path}", WEBHOOKS, Access.AUTHENTICATED),
    # The caller's events live, as Server-Sent Events: before the history's, whose {/id}
    # would take "stream" for an id.
    _route(
        r"/api/events/stream/*",
        "/api/events/stream",
        WEBHOOKS,
        Access.AUTHENTICATED,
        streaming=True,
    ),
    # The caller's event history (webhooks-service keeps it): every event, or one by id.
    _route(r"/api/events(/[^/]+)?/*", "/api/events{/id}", WEBHOOKS, Access.AUTHENTICATED),
)


def resolve(path: str, routes: tuple[Route, ...] = ROUTES) -> Route | None:
    """The route serving ``path``, or None (404)."""
    for route in routes:
        if route.pattern.fullmatch(path):
            return route
    return None
