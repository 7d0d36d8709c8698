"""The response headers the servers write on every service alike, as OpenAPI header objects.

Every string a header holds has a bound (docs/api.md#limits): these are what the servers
write, so a client may size its buffers by them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REQUEST_ID_HEADER: Mapping[str, Any] = {
    "description": "The request's id, as received (when well formed) or made up; in the logs.",
    "required": True,
    # api_shared.request_id: what it accepts from a client, and the 32 hex digits it makes.
    "schema": {"type": "string", "maxLength": 128, "pattern": "^[A-Za-z0-9][A-Za-z0-9._:-]*$"},
}
REQUEST_ID: Mapping[str, Any] = {"X-Request-ID": REQUEST_ID_HEADER}
WWW_AUTHENTICATE: Mapping[str, Any] = {
    "WWW-Authenticate": {
        "description": "The bearer challenge (RFC 6750).",
        "required": True,
        "schema": {"type": "string", "maxLength": 256, "pattern": "^Bearer"},
    }
}
LOCATION: Mapping[str, Any] = {
    "Location": {
        "description": "The path of the created resource.",
        "required": True,
        "schema": {"type": "string", "maxLength": 256, "pattern": "^/"},
    }
}
RETRY_AFTER: Mapping[str, Any] = {
    "Retry-After": {
        "description": "Seconds to wait before trying again.",
        "required": True,
        "schema": {"type": "string", "maxLength": 10, "pattern": "^[0-9]+$"},
    }
}
ETAG: Mapping[str, Any] = {
    "ETag": {
        "description": "The strong entity tag of this version, for If-Match.",
        "required": True,
        "schema": {"type": "string", "maxLength": 128, "pattern": '^"[^"]*"$'},
    }
}
