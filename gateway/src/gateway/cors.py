"""CORS for browsers on configured origins; preflights are answered here, never proxied."""

from __future__ import annotations

from sanic import Request
from sanic.response import BaseHTTPResponse, HTTPResponse

from api_shared.types import App

ALLOWED_METHODS = "GET, HEAD, POST, PUT, PATCH, DELETE"
ALLOWED_HEADERS = frozenset(
    {"authorization", "content-type", "idempotency-key", "if-match", "x-request-id", "accept"}
)
# Every response header the API document declares that a browser would otherwise hide from
# a script (the CORS-safelisted ones, Cache-Control among them, need no mention).
EXPOSED_HEADERS = (
    "Location, ETag, X-Request-ID, Retry-After, RateLimit, RateLimit-Policy, WWW-Authenticate, "
    "Idempotent-Replayed, Deprecation, Sunset, Link"
)
PREFLIGHT_MAX_AGE_S = "600"


def is_preflight(request: Request) -> bool:
    return (
        request.method == "OPTIONS"
        and "origin" in request.headers
        and "access-control-request-method" in request.headers
    )


def preflight_response(request: Request, origins: frozenset[str]) -> HTTPResponse:
    """204; with the CORS grant only when the origin and every requested header are allowed."""
    headers = {"Vary": "Origin"}
    origin = request.headers.get("origin", "")
    requested = {
        name.strip().lower()
        for name in request.headers.get("access-control-request-headers", "").split(",")
        if name.strip()
    }
    if origin in origins and requested <= ALLOWED_HEADERS:
        headers |= {
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Allow-Methods": ALLOWED_METHODS,
            "Access-Control-Allow-Headers": ", ".join(sorted(requested)) or "content-type",
            "Access-Control-Max-Age": PREFLIGHT_MAX_AGE_S,
        }
    return HTTPResponse(status=204, headers=headers)


def vary_with_origin(response: BaseHTTPResponse) -> None:
    """Add ``Origin`` to the response's ``Vary``, keeping what an upstream put there.

    books-graphql answers ``Vary: Accept``; replacing it would let a cache serve one
    representation to a client that asked for another.
    """
    fields = [
        name.strip()
        for value in response.headers.getall("vary", [])
        for name in value.split(",")
        if name.strip()
    ]
    if "*" in fields or "origin" in (name.lower() for name in fields):
        return
    response.headers["Vary"] = ", ".join([*fields, "Origin"])


def install_cors(app: App, origins: frozenset[str]) -> None:
    """Grant configured origins on actual responses (errors included).

    Every response says ``Vary: Origin``, granted or not: a shared cache must not serve a
    response made for one origin (or none) to another.
    """

    def add_cors_headers(request: Request, response: BaseHTTPResponse) -> None:
        vary_with_origin(response)
        origin = request.headers.get("origin")
        if origin is not None and origin in origins:
            response.headers["Access-Control-Allow-Origin"] = origin
            response.headers["Access-Control-Expose-Headers"] = EXPOSED_HEADERS

    if origins:
        app.register_middleware(add_cors_headers, "response", priority=500)
