"""Deprecated route aliases: the headers that say so, and their mark in the OpenAPI document.

The API names resources in its paths and carries the action in the method
(docs/api.md#deprecated-routes). Routes that once carried a verb answer on as aliases of their
noun form until a major release removes them; every answer of theirs, errors included, says
so with ``Deprecation`` (RFC 9745: since when), ``Sunset`` (RFC 8594: after when it may go)
and ``Link: <successor>; rel="successor-version"``. One place builds them for every service.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any, TypeVar

from sanic import Request
from sanic.response import HTTPResponse
from sanic_ext.extensions.openapi.builders import OperationStore

from api_shared.errors import ApiError

# The day the noun forms landed, and six months later: the earliest an alias may be removed.
NOUN_ROUTES_SINCE = datetime(2026, 11, 27, tzinfo=UTC)
NOUN_ROUTES_SUNSET = datetime(2027, 5, 27, tzinfo=UTC)

Handler = Callable[..., Awaitable[HTTPResponse]]
H = TypeVar("H", bound=Handler)


def deprecation_headers(
    successor: str,
    *,
    since: datetime = NOUN_ROUTES_SINCE,
    sunset: datetime = NOUN_ROUTES_SUNSET,
) -> dict[str, str]:
    """The headers of a deprecated route's answers, ``successor`` being the concrete path
    that replaces it (ids filled in)."""
    return {
        # RFC 9745: a structured-field date, "@" and Unix seconds.
        "Deprecation": f"@{int(since.timestamp())}",
        # RFC 8594: an HTTP-date.
        "Sunset": format_datetime(sunset.astimezone(UTC), usegmt=True),
        "Link": f'<{successor}>; rel="successor-version"',
    }


# The headers above as the API document declares them (the gateway's merge puts them on
# every response of a deprecated operation). Not required: the gateway's own refusals (a
# missing token, its rate limits) come before the service and carry none.
OPENAPI_HEADERS: Mapping[str, Mapping[str, Any]] = {
    "Deprecation": {
        "description": "Since when the route is deprecated (RFC 9745): `@` and Unix seconds.",
        "required": False,
        "schema": {"type": "string", "maxLength": 21, "pattern": "^@[0-9]+$"},
    },
    "Sunset": {
        "description": "After when the route may be removed (RFC 8594), an HTTP-date.",
        "required": False,
        "schema": {"type": "string", "maxLength": 29, "pattern": "^[A-Z][a-z]{2}, [0-9]{2} "},
    },
    "Link": {
        "description": 'The route that replaces it: `<path>; rel="successor-version"`.',
        "required": False,
        "schema": {
            "type": "string",
            # The successor is the request's own path, renamed: as long as a request line may
            # be (Sanic's REQUEST_MAX_HEADER_SIZE, 8 KiB), percent-encoded ids included.
            "maxLength": 8192,
            "pattern": '^<[^>]+>; rel="successor-version"$',
        },
    },
}


def deprecated_alias(successor: str) -> Callable[[H], H]:
    """Mark a handler as a deprecated alias of ``successor``, a path template filled in with
    the handler's path parameters (``/api/webhooks/{endpoint_id}/secrets``).

    Its answers, and the contract errors it raises, carry ``deprecation_headers``; its
    operation says ``deprecated: true``. Put it below the ``openapi`` decorators, so that they
    document the function it returns.
    """

    def decorate(handler: H) -> H:
        @functools.wraps(handler)
        async def alias(request: Request, *args: Any, **kwargs: Any) -> HTTPResponse:
            headers = deprecation_headers(successor.format_map(_Parameters(kwargs)))
            try:
                response = await handler(request, *args, **kwargs)
            except ApiError as error:
                error.headers.update(headers)
                raise
            response.headers.update(headers)
            return response

        OperationStore()[alias].deprecate()
        return alias  # type: ignore[return-value]

    return decorate


class _Parameters(dict[str, str]):
    """The path parameters; a name the path lacks stays a placeholder rather than failing."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        super().__init__({name: str(value) for name, value in values.items()})

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"
