"""The merged OpenAPI document keeps routed paths and adds the gateway's own answers."""

from __future__ import annotations

from typing import Any

from api_shared.http import HttpSession
from gateway.docs.asyncapi import merge_events
from gateway.docs.cache import RETRY_MAX_S, DocsCache
from gateway.docs.openapi import merge

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


def test_every_response_of_every_operation_documents_the_request_id() -> None:
    paths = merge({"users": USERS_DOCUMENT})["paths"]

    responses = [
        answer
        for operations in paths.values()
        for operation in operations.values()
        for answer in operation["responses"].values()
    ]
    assert responses
    assert all(
        answer["headers"]["X-Request-ID"] == {"$ref": "#/components/headers/X-Request-ID"}
        for answer in responses
    )


def _headers(document: dict[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """Each header of each response: where, its name, the method, its object."""
    return [
        (f"{method.upper()} {path} {status}", name, method, header)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        for status, answer in operation["responses"].items()
        for name, header in answer.get("headers", {}).items()
    ]


def test_every_response_header_is_declared_once_and_referenced() -> None:
    signed_up = {"description": "Created", "headers": {"Location": {"schema": {"type": "string"}}}}
    paths = {"/api/users": {"post": {"responses": {"201": signed_up}}}}
    document = merge({"users": {**USERS_DOCUMENT, "paths": paths}})

    found = _headers(document)
    declared = document["components"]["headers"]
    assert found
    for where, name, _, header in found:
        assert header == {"$ref": f"#/components/headers/{name}"}, where
    assert {name for _, name, _, _ in found} == set(declared)
    # The platform's own definition, not the service's looser one.
    assert declared["Location"]["schema"]["maxLength"]
    assert declared["X-Request-ID"]["required"] is True
    assert declared["Access-Control-Allow-Origin"]["required"] is False


def test_forwarded_answers_declare_the_rate_limit_headers_the_gateways_own_do_not() -> None:
    document = merge({"users": USERS_DOCUMENT})

    listing = document["paths"]["/api/users"]["get"]["responses"]
    health = document["paths"]["/health"]["get"]["responses"]
    assert {"RateLimit", "RateLimit-Policy"} <= set(listing["200"]["headers"])
    assert {"RateLimit", "RateLimit-Policy", "Retry-After"} <= set(listing["429"]["headers"])
    assert "RateLimit" not in health["200"]["headers"]  # liveness is never limited
    assert "Access-Control-Allow-Origin" in health["200"]["headers"]


def test_anonymous_or_bearer_is_the_documents_default_said_once() -> None:
    optional: dict[str, Any] = {"security": [{}, {"bearerAuth": []}], "responses": {}}
    document = merge({"users": {**USERS_DOCUMENT, "paths": {"/api/users": {"post": optional}}}})

    assert document["security"] == [{}, {"bearerAuth": []}]
    assert "security" not in document["paths"]["/api/users"]["post"]
    assert document["servers"][0]["url"] == "/"
    assert "RFC8725" in document["components"]["securitySchemes"]["bearerAuth"]["description"]


def test_a_deprecated_operations_answers_declare_the_deprecation_headers() -> None:
    alias = {"deprecated": True, "responses": {"200": {"description": "OK"}}}
    document = merge({"users": {**USERS_DOCUMENT, "paths": {"/api/auth/refresh": {"post": alias}}}})

    answers = document["paths"]["/api/auth/refresh"]["post"]["responses"]
    assert {"Deprecation", "Sunset", "Link"} <= set(answers["200"]["headers"])
    assert {"Deprecation", "Sunset", "Link"} <= set(answers["429"]["headers"])


BOOKS_DOCUMENT = {
    "paths": {
        "/graphql": {
            "post": {"responses": {"200": {"description": "A GraphQL response"}}},
            "get": {"responses": {"200": {"description": "A GraphQL response"}}},
        },
        "/": {"get": {"responses": {}}},  # the service's root: not routed, dropped
        "/metrics": {"get": {"responses": {}}},
    },
    "components": {"schemas": {"GraphQLResponse": {"type": "object"}}},
}


def test_graphql_is_books_graphqls_own_description_with_the_gateways_answers() -> None:
    document = merge({"books": BOOKS_DOCUMENT})

    graphql = document["paths"]["/graphql"]
    assert set(graphql) == {"get", "post"}
    assert {"200", "413", "429", "502", "503", "504"} <= set(graphql["post"]["responses"])
    assert "security" not in graphql["post"]  # public
    assert "/" not in document["paths"]
    assert "/metrics" not in document["paths"]
    assert "GraphQLResponse" in document["components"]["schemas"]


def test_without_books_graphqls_document_no_graphql_path_is_made_up() -> None:
    assert "/graphql" not in merge({"users": USERS_DOCUMENT})["paths"]


def test_the_services_error_schema_does_not_replace_the_gateways() -> None:
    document = {"components": {"schemas": {"Error": {"type": "string"}}}}

    schemas = merge({"users": document})["components"]["schemas"]

    assert schemas["Error"]["required"] == ["error"]


def test_webhooks_services_paths_are_kept_and_declare_bearer_auth() -> None:
    webhooks = {
        "paths": {
            "/api/webhooks": {"post": {"responses": {}}},
            "/api/webhooks/{endpoint_id}/deliveries": {"get": {"responses": {}}},
            "/orders": {"get": {}},  # not routed to webhooks-service: dropped
        }
    }
    paths = merge({"webhooks": webhooks})["paths"]

    assert paths["/api/webhooks"]["post"]["security"] == [{"bearerAuth": []}]
    assert "401" in paths["/api/webhooks/{endpoint_id}/deliveries"]["get"]["responses"]
    assert "/orders" not in paths


def test_the_events_document_joins_the_publishers_parts_orders_first() -> None:
    part = {"channels": {"a": {"address": "x"}}, "components": {"schemas": {"S": {}}}}
    other = {"channels": {"b": {"address": "y"}}, "components": {"schemas": {"S": {"type": 1}}}}

    merged = merge_events({"users": other, "orders": part, "books": {"channels": {"c": {}}}})

    assert list(merged["channels"]) == ["a", "b"]  # books publishes nothing: not asked, not kept
    assert merged["components"]["schemas"]["S"] == {}  # the first publisher's, once
    assert merged["servers"]["nats"]["protocol"] == "nats"


def test_a_long_outage_keeps_retrying_at_the_longest_wait() -> None:
    """Thousands of failed merges in a row (hours of an upstream down): the wait stays at
    its cap; 2**n seconds would no longer fit a float."""
    cache = DocsCache(
        HttpSession(timeout_s=1.0), {}, "/docs/openapi.json", merge, clock=lambda: 1000.0
    )

    for _ in range(2_000):
        cache._failed("an upstream is down")

    assert cache._next_refresh == 1000.0 + RETRY_MAX_S
