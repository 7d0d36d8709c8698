"""One AsyncAPI 3.0 document of the platform's events, merged from the services' own
(docs/api.md#events).

Each service that publishes events (users-service, orders-service) serves the document of
its own event catalog at ``/docs/asyncapi.json`` (``api_shared.events.asyncapi``), so each
stays the owner of its events; the gateway joins them and serves the result at
``/asyncapi.json``, as it does the OpenAPI documents at ``/openapi.json``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from api_shared.events.asyncapi import DOCUMENT_PATH, merge
from api_shared.http import HttpSession
from api_shared.version import service_version
from gateway.docs.cache import DocsCache
from gateway.routing import ORDERS, USERS
from gateway.upstream.replicas import Upstream

TITLE = "API platform events"
PUBLISHERS = (ORDERS, USERS)


def merge_events(documents: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The services' documents as one, in ``PUBLISHERS`` order, at the gateway's version
    (as ``/openapi.json``: gateway.docs.openapi)."""
    parts = (documents[name] for name in PUBLISHERS if name in documents)
    return merge(TITLE, parts, version=service_version("gateway"))


def events_docs(
    http: HttpSession,
    upstreams: Mapping[str, Upstream],
    *,
    clock: Callable[[], float] = time.monotonic,
) -> DocsCache:
    """The merged AsyncAPI document of the services that publish events."""
    publishers = {name: upstreams[name] for name in PUBLISHERS if name in upstreams}
    return DocsCache(http, publishers, DOCUMENT_PATH, merge_events, clock=clock)
