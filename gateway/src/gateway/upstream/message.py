"""What crosses the gateway: a request's header block as sent upstream, and the upstream's
response as the client gets it.

Hop-by-hop headers (RFC 9110 §7.6.1, and any the ``Connection`` header names) are dropped
both ways. A client's trace context (``traceparent``, ``tracestate``, ``baggage``) is not
forwarded: traces start at the gateway (api_shared.tracing), whose client span adds its own.
The ``X-Forwarded-*`` headers, the request id and the client's address are the gateway's.
The header block is built once, as bytes, whichever replica the request goes to.
"""

from __future__ import annotations

import functools
import re
from urllib.parse import urlsplit

from sanic import Request
from sanic.compat import Header

from api_shared.client_address import CLIENT_ADDRESS_HEADER
from api_shared.errors import ValidationFailedError
from api_shared.request_id import REQUEST_ID_HEADER, request_id_of
from api_shared.responses import Response
from gateway.upstream.connection import UpstreamResponse

# RFC 9110 §7.6.1: connection-specific headers never cross a proxy.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# Recomputed for the new message by whoever sends it.
_NOT_FORWARDED = HOP_BY_HOP | {"host", "content-length"}
# A public client's: it must not choose trace ids, force sampling or plant baggage.
_TRACE_CONTEXT = frozenset({"traceparent", "tracestate", "baggage"})
# The request id, and the client's address: a client's own X-Real-IP would name any address.
_SET_HERE = frozenset({REQUEST_ID_HEADER.lower(), CLIENT_ADDRESS_HEADER.lower()})
# Sent with a Content-Length even when empty (RFC 9110 §8.6: a body is expected).
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_FIELD_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 §5.1 token
_UNSENDABLE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\ud800-\udfff]")  # controls, non-UTF-8


def upstream_fields(request: Request, client_address: str, forwarded_for: str) -> bytes:
    """The header lines after Host, the blank line and the body, as sent upstream.

    ``client_address`` and ``forwarded_for``: who the client is and the ``X-Forwarded-For``
    chain to send, as the gateway resolved them (gateway.clientip). A header that cannot be
    forwarded as received is the client's failure: VALIDATION_FAILED.
    """
    headers = upstream_headers(request, client_address, forwarded_for)
    lines = [f"{name}: {value}\r\n" for name, value in headers]
    body = request.body
    if body or request.method in _BODY_METHODS:
        lines.append(f"Content-Length: {len(body)}\r\n")
    lines.append("\r\n")
    return "".join(lines).encode() + body


def upstream_headers(
    request: Request, client_address: str, forwarded_for: str
) -> list[tuple[str, str]]:
    """The header fields sent upstream but Host, Content-Length and the trace context: the
    client's end-to-end ones, then the gateway's own (``upstream_fields``' arguments)."""
    # Host is not forwarded but sent as X-Forwarded-Host, so it is checked with the rest.
    host = request.headers.get("host", "")
    end_to_end = _end_to_end(list(request.headers.items()))
    checked = _checked([*end_to_end, ("X-Forwarded-Host", host)])
    headers = [(name, value) for name, value in checked if not _replaced(name.lower())]
    headers += [
        ("X-Forwarded-For", forwarded_for),
        (CLIENT_ADDRESS_HEADER, client_address),
        ("X-Forwarded-Proto", request.scheme),
        ("X-Forwarded-Host", host),
        (REQUEST_ID_HEADER, request_id_of(request)),
    ]
    return headers


def origin_form(request_target: str) -> str:
    """The path and query of a request target, as sent (still percent-encoded).

    Clients may send the absolute form ``GET http://host/orders`` (RFC 9112 §3.2.2); the
    upstream gets the origin form ``/orders``, never a second scheme and host.
    """
    if request_target.startswith("/"):
        return request_target
    parts = urlsplit(request_target)
    path = parts.path if parts.path.startswith("/") else f"/{parts.path}"
    return path + (f"?{parts.query}" if parts.query else "")


def client_response(response: UpstreamResponse) -> Response:
    """The client's response: the upstream's status, end-to-end headers and body as received."""
    return Response(response.body, status=response.status, headers=client_headers(response.headers))


def client_headers(fields: list[tuple[bytes, bytes]]) -> Header:
    """The end-to-end ones of an upstream response's header fields (as received), for the
    client's response."""
    # Decoded as aiohttp decoded them; Sanic encodes them back the same way (surrogateescape).
    decoded = [
        (name.decode("utf-8", "surrogateescape"), value.decode("utf-8", "surrogateescape"))
        for name, value in fields
    ]
    return Header(_end_to_end(decoded))


def _end_to_end(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop hop-by-hop headers, including any the ``Connection`` header names."""
    lowered = [(name.lower(), name, value) for name, value in items]
    named = tuple([value for lower, _, value in lowered if lower == "connection"])
    dropped = _dropped_with(named) if named else _NOT_FORWARDED
    return [(name, value) for lower, name, value in lowered if lower not in dropped]


@functools.lru_cache(maxsize=256)  # nearly every message says "keep-alive" or "close"
def _dropped_with(connection: tuple[str, ...]) -> frozenset[str]:
    """``_NOT_FORWARDED`` and the header names the ``Connection`` values list."""
    listed = {token.strip().lower() for value in connection for token in value.split(",")}
    return _NOT_FORWARDED | listed


def _checked(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers to forward, or VALIDATION_FAILED when one cannot be forwarded as received.

    Bytes that are not UTF-8 reach Sanic as surrogates: the upstream would see other bytes
    than the gateway checked (``X-Forwarded\\xe9-For`` must not pass its filters, then arrive
    as ``X-Forwarded-For``). NUL and other controls, CR and LF above all, would change the
    request itself: RFC 9110 §5.5 says to reject them.
    """
    # One search over every value (a tab, allowed, between them) and names already seen:
    # per header and per request, two regular expressions each cost more than the rest.
    names_known = all(name in _FIELD_NAMES_SEEN for name, _ in headers)
    if names_known and not _UNSENDABLE.search("\t".join([value for _, value in headers])):
        return headers
    for name, value in headers:
        if not _FIELD_NAME.fullmatch(name) or _UNSENDABLE.search(value):
            shown = name.encode("ascii", "backslashreplace").decode()
            raise ValidationFailedError(
                f"The request header {shown!r} has characters that cannot be forwarded."
            )
        if len(_FIELD_NAMES_SEEN) < _FIELD_NAMES_KEPT:
            _FIELD_NAMES_SEEN.add(name)
    return headers


_FIELD_NAMES_SEEN: set[str] = set()  # well-formed names, as the clients spell them
_FIELD_NAMES_KEPT = 4096  # a client sending ever new names only stays on the slow path


def _replaced(name: str) -> bool:
    """Whether the gateway sets this (lower-case) header itself, or never forwards it."""
    return name.startswith("x-forwarded-") or name in _TRACE_CONTEXT or name in _SET_HERE
