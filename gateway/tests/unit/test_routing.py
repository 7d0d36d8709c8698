"""The route table sends each public path to its upstream with the right access rule."""

from __future__ import annotations

import pytest

from gateway.routing import BOOKS, ORDERS, USERS, WEBHOOKS, Access, resolve


@pytest.mark.parametrize(
    ("method", "path", "upstream", "access"),
    [
        ("POST", "/api/users", USERS, Access.PUBLIC),
        ("GET", "/api/users", USERS, Access.AUTHENTICATED),
        ("GET", "/api/users/123", USERS, Access.AUTHENTICATED),
        ("PATCH", "/api/users/123", USERS, Access.AUTHENTICATED),
        ("POST", "/api/auth/token", USERS, Access.PUBLIC),
        ("POST", "/api/auth/refresh", USERS, Access.PUBLIC),
        ("POST", "/api/auth/logout", USERS, Access.PUBLIC),
        ("POST", "/api/auth/logout-all", USERS, Access.AUTHENTICATED),
        ("GET", "/api/auth/sessions", USERS, Access.AUTHENTICATED),
        ("DELETE", "/api/auth/sessions/abc", USERS, Access.AUTHENTICATED),
        ("GET", "/api/users/me", USERS, Access.AUTHENTICATED),
        ("GET", "/.well-known/jwks.json", USERS, Access.PUBLIC),
        ("GET", "/orders", ORDERS, Access.AUTHENTICATED),
        ("POST", "/orders", ORDERS, Access.AUTHENTICATED),
        ("DELETE", "/orders/abc", ORDERS, Access.AUTHENTICATED),
        ("GET", "/users/abc/orders", ORDERS, Access.AUTHENTICATED),
        ("POST", "/graphql", BOOKS, Access.PUBLIC),
        ("GET", "/graphql", BOOKS, Access.PUBLIC),
        ("POST", "/api/webhooks", WEBHOOKS, Access.AUTHENTICATED),
        ("GET", "/api/webhooks/", WEBHOOKS, Access.AUTHENTICATED),
        ("PATCH", "/api/webhooks/abc", WEBHOOKS, Access.AUTHENTICATED),
        ("POST", "/api/webhooks/abc/rotate-secret", WEBHOOKS, Access.AUTHENTICATED),
        ("GET", "/api/webhooks/abc/deliveries", WEBHOOKS, Access.AUTHENTICATED),
        ("POST", "/api/webhooks/abc/deliveries/def/replay", WEBHOOKS, Access.AUTHENTICATED),
    ],
)
def test_each_public_path_resolves_to_its_upstream_and_access(
    method: str, path: str, upstream: str, access: Access
) -> None:
    route = resolve(path)

    assert route is not None
    assert route.upstream == upstream
    assert route.access_for(method) is access


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/api",
        "/api/usersX",
        "/ordersX",
        "/users/abc",
        "/users/a/b/orders",
        "/graphqlx",
        "/api/webhooksX",
    ],
)
def test_paths_outside_the_table_resolve_to_nothing(path: str) -> None:
    assert resolve(path) is None


@pytest.mark.parametrize(
    ("method", "path", "charge"),
    [
        ("POST", "/api/auth/token", "login"),
        ("POST", "/api/auth/token//", "login"),
        ("POST", "/api/auth/refresh", "refresh"),
        ("POST", "/api/auth/refresh///", "refresh"),
        ("POST", "/api/users", "signup"),
        ("POST", "/api/users//", "signup"),
        ("GET", "/api/auth/token", None),
        ("GET", "/api/users", None),
        ("PATCH", "/api/users/abc//", None),
        ("POST", "/api/auth/logout", None),
    ],
)
def test_every_spelling_sanic_routes_alike_draws_from_the_same_budget(
    method: str, path: str, charge: str | None
) -> None:
    # Sanic strips any number of trailing slashes: "/api/users//" is a sign-up there, so
    # it must be one here too (and must stay public, as sign-up is).
    route = resolve(path)

    assert route is not None
    assert route.charge_for(method) == charge
    if charge == "signup":
        assert route.access_for(method) is Access.PUBLIC
