"""GraphQL over HTTP, as pure rules: media types, CSRF prevention, request parameters, status.

Follows the GraphQL-over-HTTP specification (graphql.github.io/graphql-over-http):

- a response is ``application/graphql-response+json`` when the client accepts it at least as
  much as ``application/json``, and names it; otherwise ``application/json``; a client that
  accepts neither gets 406. No ``Accept`` at all means ``application/json`` (legacy clients);
- with ``application/graphql-response+json`` a request that fails before execution (parse,
  validation, limits, operation selection, variables) is 400; with ``application/json`` it is
  200 with ``errors``, as legacy clients expect;
- POST bodies are ``application/json`` (else 415); GET carries ``query``, ``variables``
  (JSON text), ``operationName`` and ``extensions`` in the query string, and may only run
  queries (405 otherwise).

Failures outside GraphQL (406, 415, 405, unreadable JSON, bad parameters, CSRF) answer with
the platform's contract error body; GraphQL errors answer with a GraphQL response.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson

from api_shared.errors import (
    MalformedJsonError,
    NotAcceptableError,
    UnsupportedMediaTypeError,
    ValidationFailedError,
)
from api_shared.media import MediaRange, parse_accept, quality_in

GRAPHQL_RESPONSE_JSON = "application/graphql-response+json"
JSON = "application/json"
HTML = "text/html"

# Apollo Server's CSRF prevention: a browser sends these content types cross-site without a
# CORS preflight; any other content type, or one of these headers, needs one.
SIMPLE_CONTENT_TYPES = frozenset(
    {"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"}
)
PREFLIGHT_HEADERS = ("apollo-require-preflight", "x-apollo-operation-name")

CSRF_MESSAGE = (
    "This request has been blocked as a potential Cross-Site Request Forgery (CSRF). "
    "Send it with a 'Content-Type' header other than "
    "application/x-www-form-urlencoded, multipart/form-data or text/plain "
    "(POST with application/json does), or with a non-empty "
    "'apollo-require-preflight' or 'x-apollo-operation-name' header."
)


class CsrfBlockedError(ValidationFailedError):
    """400 VALIDATION_FAILED: a request a browser could have sent cross-site unasked."""

    message = CSRF_MESSAGE


@dataclass(frozen=True, slots=True)
class GraphQLParams:
    """The GraphQL request parameters, checked for their types.

    ``query`` is None only when ``extensions`` names a persisted query (persisted_queries).
    """

    query: str | None
    variables: dict[str, Any] | None = None
    operation_name: str | None = None
    extensions: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Negotiation:
    """What one ``Accept`` header asks of GraphQL over HTTP (see the module docstring)."""

    media_type: str | None  # of the GraphQL response; None when neither JSON type is accepted
    prefers_html: bool  # a browser navigating here: HTML wanted more than any GraphQL type

    def response_media_type(self) -> str:
        """The media type of the GraphQL response; NOT_ACCEPTABLE if there is none."""
        if self.media_type is None:
            raise NotAcceptableError(
                f"GraphQL responses are {GRAPHQL_RESPONSE_JSON} or {JSON}; "
                "the Accept header allows neither."
            )
        return self.media_type


NO_ACCEPT = Negotiation(media_type=JSON, prefers_html=False)  # legacy clients


@lru_cache(maxsize=256)  # a server sees few distinct Accept headers; negotiate each once
def negotiate(accept: str | None) -> Negotiation:
    """The negotiation of this ``Accept``, which is parsed once for every question."""
    if accept is None or not accept.strip():
        return NO_ACCEPT
    ranges = parse_accept(accept)
    wanted_graphql = quality_in(ranges, GRAPHQL_RESPONSE_JSON)
    wanted_json = quality_in(ranges, JSON)
    wanted_html = quality_in(ranges, HTML)
    return Negotiation(
        media_type=_media_type(ranges, wanted_graphql, wanted_json),
        prefers_html=wanted_html > 0 and wanted_html > max(wanted_graphql, wanted_json),
    )


def _media_type(ranges: list[MediaRange], wanted_graphql: float, wanted_json: float) -> str | None:
    if wanted_graphql <= 0 and wanted_json <= 0:
        return None
    if wanted_graphql > wanted_json:
        return GRAPHQL_RESPONSE_JSON
    if wanted_graphql == wanted_json and _names(ranges, GRAPHQL_RESPONSE_JSON):
        return GRAPHQL_RESPONSE_JSON
    return JSON


def _names(ranges: list[MediaRange], media_type: str) -> bool:
    kind, _, subtype = media_type.partition("/")
    return any(r.type == kind and r.subtype == subtype and r.quality > 0 for r in ranges)


def needs_no_preflight(headers: Mapping[str, str]) -> bool:
    """True when a browser could send this request cross-site without a CORS preflight.

    ``headers`` must be case-insensitive (lower-case names), as Sanic's are.
    """
    content_type = headers.get("content-type")
    # Any other value, even an unparsable one, is not CORS-safelisted: it needs a preflight.
    if content_type is not None:
        essence = content_type.split(";", 1)[0].strip().lower()
        if essence not in SIMPLE_CONTENT_TYPES:
            return False
    return not any(headers.get(name) for name in PREFLIGHT_HEADERS)


def check_csrf(headers: Mapping[str, str]) -> None:
    """Refuse (400) a GraphQL request that could be a cross-site forgery."""
    if needs_no_preflight(headers):
        raise CsrfBlockedError()


def check_json_body(content_type: str | None) -> None:
    """POST bodies must be ``application/json`` (UNSUPPORTED_MEDIA_TYPE otherwise)."""
    essence = (content_type or "").split(";", 1)[0].strip().lower()
    if essence != JSON:
        raise UnsupportedMediaTypeError("GraphQL requests sent with POST must be application/json.")


def params_from_body(body: bytes) -> GraphQLParams:
    """The parameters of a POST: a JSON object ``{query, variables?, operationName?}``."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise MalformedJsonError("The request body is not valid JSON.") from None
    if not isinstance(value, dict):
        raise MalformedJsonError(
            "The request body must be a JSON object {query, variables?, operationName?}."
        )
    return _params(
        value.get("query"),
        variables=value.get("variables"),
        operation_name=value.get("operationName"),
        extensions=value.get("extensions"),
    )


def params_from_query_string(pairs: Iterable[tuple[str, str]]) -> GraphQLParams:
    """The parameters of a GET: ``query``, ``variables`` (JSON), ``operationName``."""
    values: dict[str, str] = {}
    for name, value in pairs:
        if name in values:
            raise _invalid(name, "is given more than once")
        values[name] = value
    return _params(
        values.get("query"),
        variables=_json_parameter(values, "variables"),
        operation_name=values.get("operationName") or None,
        extensions=_json_parameter(values, "extensions"),
    )


def _json_parameter(values: Mapping[str, str], name: str) -> Any:
    raw = values.get(name)
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise _invalid(name, "must be a JSON object") from None


def _params(query: Any, *, variables: Any, operation_name: Any, extensions: Any) -> GraphQLParams:
    persisted = isinstance(extensions, dict) and "persistedQuery" in extensions
    if query is None and persisted:
        query_text: str | None = None
    elif query is None or (isinstance(query, str) and not query.strip()):
        raise _invalid("query", "is required")
    elif not isinstance(query, str):
        raise _invalid("query", "must be a string")
    else:
        query_text = query
    if variables is not None and not isinstance(variables, dict):
        raise _invalid("variables", "must be a JSON object")
    if operation_name is not None and not isinstance(operation_name, str):
        raise _invalid("operationName", "must be a string")
    # Extensions other than persistedQuery are accepted and ignored, but must be well formed.
    if extensions is not None and not isinstance(extensions, dict):
        raise _invalid("extensions", "must be a JSON object")
    return GraphQLParams(
        query=query_text,
        variables=variables,
        operation_name=operation_name,
        extensions=extensions,
    )


def _invalid(name: str, reason: str) -> ValidationFailedError:
    return ValidationFailedError(f"{name} {reason}", fields={name: reason})


def http_status(media_type: str, *, is_request_error: bool) -> int:
    """The status of a GraphQL response (see the module docstring)."""
    if is_request_error and media_type == GRAPHQL_RESPONSE_JSON:
        return 400
    return 200
