"""The merged OpenAPI document keeps routed paths and adds the gateway's own answers."""

from __future__ import annotations

from gateway.docs import merge

USERS_DOCUMENT = {
    "paths": {
        "/health": {"get": {"responses": {}}},
        "/api/users": {"get": {"responses": {"200": {"description": "OK"}}}, "post": {}},
        "/api/users/{user_id}": {"delete": {"responses": {}}},
        "/orders": {"get": {}},  # not routed to users-service: dropped
    },
    "components": {"schemas": {"UserPublic": {"type": "object"}}},
}


def test_only_paths_routed_to_the_service_are_kept() -> None:
    document = merge({"users": USERS_DOCUMENT})

    assert "/api/users" in document["paths"]
    assert "/api/users/{user_id}" in document["paths"]
    assert "/orders" not in document["paths"]
    assert document["paths"]["/health"]["get"]["tags"] == ["operations"]  # the gateway's own
    assert "UserPublic" in document["components"]["schemas"]


def test_protected_operations_declare_bearer_auth_and_401_public_ones_do_not() -> None:
    paths = merge({"users": USERS_DOCUMENT})["paths"]

    listing, sign_up = paths["/api/users"]["get"], paths["/api/users"]["post"]
    assert listing["security"] == [{"bearerAuth": []}]
    assert "401" in listing["responses"]
    assert "security" not in sign_up
    assert "401" not in sign_up["responses"]
    assert {"413", "429", "502", "503", "504"} <= set(sign_up["responses"])
