"""The GraphQL-over-HTTP rules as pure functions: negotiation, CSRF, parameters, status."""

from __future__ import annotations

import pytest

from api_shared.errors import (
    MalformedJsonError,
    NotAcceptableError,
    UnsupportedMediaTypeError,
    ValidationFailedError,
)
from api_shared.media import MediaRange, parse_accept
from books_graphql.http import protocol
from books_graphql.http.protocol import (
    GRAPHQL_RESPONSE_JSON,
    JSON,
    CsrfBlockedError,
    GraphQLParams,
    check_csrf,
    check_json_body,
    http_status,
    needs_no_preflight,
    negotiate,
    params_from_body,
    params_from_query_string,
)

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, JSON),
        ("", JSON),
        ("*/*", JSON),
        ("application/*", JSON),
        ("application/json", JSON),
        (GRAPHQL_RESPONSE_JSON, GRAPHQL_RESPONSE_JSON),
        (f"{GRAPHQL_RESPONSE_JSON}, {JSON}", GRAPHQL_RESPONSE_JSON),
        (f"{JSON}, {GRAPHQL_RESPONSE_JSON}", GRAPHQL_RESPONSE_JSON),
        (f"{GRAPHQL_RESPONSE_JSON};q=0.9, {JSON}", JSON),
        (f"{JSON};q=0.5, {GRAPHQL_RESPONSE_JSON};q=0.8", GRAPHQL_RESPONSE_JSON),
        (f"{GRAPHQL_RESPONSE_JSON};q=0, */*", JSON),
        ("application/json, multipart/mixed", JSON),  # what GraphiQL sends
        (BROWSER, JSON),
    ],
)
def test_the_response_media_type_is_negotiated(accept: str | None, expected: str) -> None:
    assert negotiate(accept).response_media_type() == expected


@pytest.mark.parametrize(
    "accept", ["text/html", "application/xml", f"{JSON};q=0, {GRAPHQL_RESPONSE_JSON};q=0"]
)
def test_a_client_that_takes_neither_json_type_is_not_acceptable(accept: str) -> None:
    with pytest.raises(NotAcceptableError):
        negotiate(accept).response_media_type()


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (BROWSER, True),
        ("text/html", True),
        (None, False),
        ("*/*", False),
        ("text/html, application/json", False),  # a tie goes to the API
        ("application/json", False),
        (f"text/html;q=0.5, {GRAPHQL_RESPONSE_JSON}", False),
    ],
)
def test_html_is_served_only_to_clients_that_prefer_it(accept: str | None, expected: bool) -> None:
    assert negotiate(accept).prefers_html is expected


def test_an_accept_header_is_parsed_once_for_every_question(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[str] = []

    def counting_parse_accept(header: str) -> list[MediaRange]:
        parsed.append(header)
        return parse_accept(header)

    monkeypatch.setattr(protocol, "parse_accept", counting_parse_accept)
    accept = "application/json;q=0.3, text/html;q=0.2, */*;q=0.1"  # seen by no other test
    first = negotiate(accept)
    again = negotiate(accept)

    assert (first.response_media_type(), first.prefers_html) == (JSON, False)
    assert again is first
    assert parsed == [accept]


@pytest.mark.parametrize(
    ("headers", "refused"),
    [
        ({}, True),
        ({"content-type": "text/plain"}, True),
        ({"content-type": "text/plain; charset=utf-8"}, True),
        ({"content-type": "application/x-www-form-urlencoded"}, True),
        ({"content-type": "Multipart/Form-Data; boundary=x"}, True),
        ({"apollo-require-preflight": ""}, True),  # present but empty: no preflight needed
        ({"content-type": "application/json"}, False),
        ({"content-type": "application/json; charset=utf-8"}, False),
        ({"content-type": "application/graphql"}, False),
        ({"content-type": ""}, False),  # not a simple type: a browser would preflight it
        ({"apollo-require-preflight": "true"}, False),
        ({"x-apollo-operation-name": "Books"}, False),
        ({"content-type": "text/plain", "apollo-require-preflight": "1"}, False),
    ],
)
def test_csrf_prevention_refuses_what_a_browser_sends_without_preflight(
    headers: dict[str, str], refused: bool
) -> None:
    assert needs_no_preflight(headers) is refused
    if refused:
        with pytest.raises(CsrfBlockedError, match="Cross-Site Request Forgery"):
            check_csrf(headers)
    else:
        check_csrf(headers)


def test_a_csrf_refusal_is_a_400_validation_failure() -> None:
    error = CsrfBlockedError()

    assert (error.status, error.code) == (400, "VALIDATION_FAILED")
    assert "apollo-require-preflight" in error.message


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON"]
)
def test_json_bodies_are_accepted(content_type: str) -> None:
    check_json_body(content_type)


@pytest.mark.parametrize(
    "content_type", [None, "", "text/plain", "application/graphql", "application/json-patch+json"]
)
def test_other_bodies_are_unsupported(content_type: str | None) -> None:
    with pytest.raises(UnsupportedMediaTypeError):
        check_json_body(content_type)


def test_a_post_body_gives_its_parameters() -> None:
    body = b'{"query": "{ books { id } }", "variables": {"a": 1}, "operationName": "Q", "x": 0}'

    assert params_from_body(body) == GraphQLParams(
        query="{ books { id } }", variables={"a": 1}, operation_name="Q"
    )


def test_null_optional_parameters_are_absent_ones() -> None:
    body = b'{"query": "{ books { id } }", "variables": null, "operationName": null}'

    assert params_from_body(body) == GraphQLParams(query="{ books { id } }")


@pytest.mark.parametrize("body", [b"{", b"", b"[]", b"null", b'"{ books { id } }"'])
def test_a_body_that_is_not_a_json_object_is_malformed(body: bytes) -> None:
    with pytest.raises(MalformedJsonError):
        params_from_body(body)


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        (b"{}", "query", "is required"),
        (b'{"query": "  "}', "query", "is required"),
        (b'{"query": ["{ a }"]}', "query", "must be a string"),
        (b'{"query": "{ a }", "variables": "{}"}', "variables", "must be a JSON object"),
        (b'{"query": "{ a }", "operationName": 1}', "operationName", "must be a string"),
        (b'{"query": "{ a }", "extensions": []}', "extensions", "must be a JSON object"),
    ],
)
def test_parameters_of_the_wrong_type_name_the_field(body: bytes, field: str, reason: str) -> None:
    with pytest.raises(ValidationFailedError) as raised:
        params_from_body(body)

    assert raised.value.fields == {field: reason}


def test_a_query_string_gives_its_parameters_with_json_variables() -> None:
    pairs = [("query", "query Q($id: ID!) { book(id: $id) { id } }"), ("variables", '{"id": "1"}')]

    params = params_from_query_string([*pairs, ("operationName", "Q"), ("extensions", "{}")])

    assert params == GraphQLParams(
        query="query Q($id: ID!) { book(id: $id) { id } }",
        variables={"id": "1"},
        operation_name="Q",
        extensions={},
    )


def test_blank_optional_query_parameters_are_absent_ones() -> None:
    params = params_from_query_string(
        [("query", "{ a }"), ("variables", ""), ("operationName", "")]
    )

    assert params == GraphQLParams(query="{ a }")


@pytest.mark.parametrize(
    ("pairs", "field"),
    [
        ([], "query"),
        ([("query", "{ a }"), ("query", "{ b }")], "query"),
        ([("query", "{ a }"), ("variables", "{nope")], "variables"),
        ([("query", "{ a }"), ("variables", "[1]")], "variables"),
        ([("query", "{ a }"), ("extensions", "1")], "extensions"),
    ],
)
def test_bad_query_string_parameters_name_the_field(
    pairs: list[tuple[str, str]], field: str
) -> None:
    with pytest.raises(ValidationFailedError) as raised:
        params_from_query_string(pairs)

    assert raised.value.fields is not None
    assert list(raised.value.fields) == [field]


@pytest.mark.parametrize(
    ("media_type", "is_request_error", "status"),
    [
        (GRAPHQL_RESPONSE_JSON, True, 400),
        (GRAPHQL_RESPONSE_JSON, False, 200),
        (JSON, True, 200),
        (JSON, False, 200),
    ],
)
def test_only_the_new_media_type_turns_request_errors_into_400(
    media_type: str, is_request_error: bool, status: int
) -> None:
    assert http_status(media_type, is_request_error=is_request_error) == status
