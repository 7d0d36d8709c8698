"""The route table sends each public path to its upstream with the right access rule."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gateway.routing import BOOKS, ORDERS, ROUTES, USERS, WEBHOOKS, Access, resolve


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
        ("DELETE", "/api/auth/sessions", USERS, Access.AUTHENTICATED),
        ("DELETE", "/api/auth/sessions/current", USERS, Access.AUTHENTICATED),
        ("GET", "/api/auth/sessions", USERS, Access.AUTHENTICATED),
        ("DELETE", "/api/auth/sessions/abc", USERS, Access.AUTHENTICATED),
        ("GET", "/api/users/me", USERS, Access.AUTHENTICATED),
        ("GET", "/.well-known/jwks.json", USERS, Access.PUBLIC),
        ("POST", "/api/email-verifications", USERS, Access.PUBLIC),
        ("POST", "/api/email-verification-requests", USERS, Access.AUTHENTICATED),
        ("POST", "/api/password-reset-requests", USERS, Access.PUBLIC),
        ("POST", "/api/password-resets", USERS, Access.PUBLIC),
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
        ("POST", "/api/webhooks/abc/secrets", WEBHOOKS, Access.AUTHENTICATED),
        ("POST", "/api/webhooks/abc/deliveries/def/attempts", WEBHOOKS, Access.AUTHENTICATED),
        ("GET", "/api/events", WEBHOOKS, Access.AUTHENTICATED),
        ("GET", "/api/events/", WEBHOOKS, Access.AUTHENTICATED),
        ("GET", "/api/events/5b0e0000-0000-4000-8000-0000000000aa", WEBHOOKS, Access.AUTHENTICATED),
        ("GET", "/api/events/e-1//", WEBHOOKS, Access.AUTHENTICATED),
        ("POST", "/api/api-keys", USERS, Access.AUTHENTICATED),
        ("GET", "/api/api-keys/", USERS, Access.AUTHENTICATED),
        ("GET", "/api/api-keys/3f1e0000-0000-4000-8000-0000000000aa", USERS, Access.AUTHENTICATED),
        ("DELETE", "/api/api-keys/abc//", USERS, Access.AUTHENTICATED),
        ("GET", "/api/api-keys/current", USERS, Access.AUTHENTICATED),
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
        "/api/email-verificationsX",
        "/api/password-resets/abc",
        "/api/api-keysX",
        "/api/api-keys/abc/def",
        "/api/eventsX",
        "/api/events/abc/def",
    ],
)
def test_paths_outside_the_table_resolve_to_nothing(path: str) -> None:
    assert resolve(path) is None


@pytest.mark.parametrize(
    "path", ["/api/events/stream", "/api/events/stream/", "/api/events/stream//"]
)
def test_the_event_stream_is_a_streaming_route_of_its_own(path: str) -> None:
    route = resolve(path)

    assert route is not None
    assert route.template == "/api/events/stream"
    assert (route.upstream, route.access_for("GET")) == (WEBHOOKS, Access.AUTHENTICATED)
    assert route.streams("GET")
    assert not route.streams("POST")
    assert not route.streams("HEAD")  # its head alone: a whole answer


@pytest.mark.parametrize(
    "path", ["/api/events", "/api/events/streams", "/api/events/e-1", "/orders"]
)
def test_every_other_route_answers_whole(path: str) -> None:
    route = resolve(path)

    assert route is not None
    assert not route.streams("GET")


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
        ("DELETE", "/api/auth/sessions/current", None),
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


# The specification's first rule: the method carries the action, never the path. These verb
# paths answer on as deprecated aliases of their noun forms until a major release removes
# them (docs/api.md#deprecated-routes): the only templates allowed a verb. ("reset" is no
# verb here: a password reset is a resource, /api/password-resets.)
DEPRECATED = {
    "/api/auth/refresh": ("POST", "/api/auth/refresh"),
    "/api/auth/logout": ("POST", "/api/auth/logout"),
    "/api/auth/logout-all": ("POST", "/api/auth/logout-all"),
    "/api/webhooks/{id}/rotate-secret": ("POST", "/api/webhooks/{endpoint_id}/rotate-secret"),
    "/api/webhooks/{id}/deliveries/{deliveryId}/replay": (
        "POST",
        "/api/webhooks/{endpoint_id}/deliveries/{delivery_id}/replay",
    ),
}
VERBS = frozenset(
    [
        "activate",
        "cancel",
        "confirm",
        "create",
        "deactivate",
        "delete",
        "disable",
        "enable",
        "get",
        "login",
        "logout",
        "logout-all",
        "refresh",
        "remove",
        "replay",
        "resend",
        "revoke",
        "rotate",
        "rotate-secret",
        "search",
        "send",
        "set",
        "ship",
        "update",
        "verify",
    ]
)
MERGED_DOCUMENT = Path(__file__).resolve().parents[2] / "contracts" / "openapi.json"


def _verbs(template: str) -> set[str]:
    words = set()
    for segment in re.split(r"[/{}]", template):
        words.update({segment, *segment.split("-")} & VERBS)
    return words


def test_no_route_template_but_the_deprecated_aliases_names_a_verb() -> None:
    with_verbs = {route.template for route in ROUTES if _verbs(route.template)}

    assert with_verbs == set(DEPRECATED)


def test_every_published_path_but_the_deprecated_aliases_is_a_noun() -> None:
    paths = json.loads(MERGED_DOCUMENT.read_text(encoding="utf-8"))["paths"]

    assert {path for path in paths if _verbs(path)} == {doc for _, doc in DEPRECATED.values()}


@pytest.mark.parametrize("template", sorted(DEPRECATED))
def test_each_deprecated_alias_is_served_and_marked_deprecated(template: str) -> None:
    method, documented = DEPRECATED[template]
    concrete = template.replace("{id}", "abc").replace("{deliveryId}", "def")
    operations = json.loads(MERGED_DOCUMENT.read_text(encoding="utf-8"))["paths"][documented]

    route = resolve(concrete)

    assert route is not None
    assert route.template == template
    assert operations[method.lower()]["deprecated"] is True
    assert all(not op.get("deprecated") for m, op in operations.items() if m != method.lower())
