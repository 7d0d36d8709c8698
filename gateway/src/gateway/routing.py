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
) -> Route:
    return Route(re.compile(regex), template, upstream, access, public_methods, charges)


# The gateway's own public paths: the merged documents and the page that browses them.
OPENAPI_DOCUMENT, ASYNCAPI_DOCUMENT, DOCS_PAGE = "/openapi.json", "/asyncapi.json", "/docs"

# The per-address budgets of ``charges`` (gateway.pipeline.Limits).
LOGIN, REFRESH, SIGNUP = "login", "refresh", "signup"


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
    # Login and refresh are public, each with its own budget per address.
    _route(
        r"/api/auth/token/*", "/api/auth/token", USERS, Access.PUBLIC, charges=(("POST", LOGIN),)
    ),
    _route(
        r"/api/auth/refresh/*",
        "/api/auth/refresh",
        USERS,
        Access.PUBLIC,
        charges=(("POST", REFRESH),),
    ),
    # The caller's own sessions; the rest of /api/auth (logout) is public.
    _route(r"/api/auth/logout-all/*", "/api/auth/logout-all", USERS, Access.AUTHENTICATED),
    _route(
        r"/api/auth/sessions(/[^/]+)?/*", "/api/auth/sessions{/id}", USERS, Access.AUTHENTICATED
    ),
    _route(r"/api/auth(/.*)?", "/api/auth{/path}", USERS, Access.PUBLIC),
    _route(r"/\.well-known/jwks\.json", "/.well-known/jwks.json", USERS, Access.PUBLIC),
    _route(r"/orders(/.*)?", "/orders{/path}", ORDERS, Access.AUTHENTICATED),
    _route(r"/users/[^/]+/orders/*", "/users/{user_id}/orders", ORDERS, Access.AUTHENTICATED),
    _route(r"/graphql/*", "/graphql", BOOKS, Access.PUBLIC),
    # Endpoints and their deliveries; webhooks-service itself admits admins only.
    _route(r"/api/webhooks/*", "/api/webhooks", WEBHOOKS, Access.AUTHENTICATED),
    _route(r"/api/webhooks/.+", "/api/webhooks/{path}", WEBHOOKS, Access.AUTHENTICATED),
)


def resolve(path: str, routes: tuple[Route, ...] = ROUTES) -> Route | None:
    """The route serving ``path``, or None (404)."""
    for route in routes:
        if route.pattern.fullmatch(path):
            return route
    return None
