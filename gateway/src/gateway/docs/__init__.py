"""The documents the gateway serves, merged from the services' own: the OpenAPI document at
``/openapi.json`` (``openapi``, with what the gateway itself declares in it: ``declared``) and
the AsyncAPI document of the events at ``/asyncapi.json`` (``asyncapi``), each kept and
refreshed by a ``cache.DocsCache``. The browsable page at ``/docs`` is ``gateway.swagger``'s.

``merge`` and the cache are re-exported for the callers outside the gateway (the contract
gate's snapshots).
"""

from __future__ import annotations

from gateway.docs.cache import DocsCache, MergedDocument
from gateway.docs.openapi import OPENAPI_PATH, merge, openapi_docs

__all__ = ["OPENAPI_PATH", "DocsCache", "MergedDocument", "merge", "openapi_docs"]
