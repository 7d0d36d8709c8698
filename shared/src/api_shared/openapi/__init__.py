"""OpenAPI 3.0 documentation of the contract:

- ``dialect``: pydantic models as OpenAPI 3.0 component schemas (``component_schemas``);
- ``shapes``: the contract's bodies (``Error``, ``ItemEnvelope[T]``, ``PageEnvelope[T]``);
- ``store``: sanic-ext's registries the decorators write to (``schema_ref``);
- ``headers``: the response headers every service writes (``REQUEST_ID``, ``ETAG``, …);
- ``parameters`` and ``responses``: sanic-ext decorators and parameters every service
  documents alike (and the error responses as plain objects, for a document put together
  by hand);
- ``operations``: whole operations of the usual kinds (``list_operation``,
  ``get_operation``, ``change_operation``).

The names services use are re-exported here, so ``from api_shared.openapi import ...`` reads
as one vocabulary.
"""

from __future__ import annotations

from api_shared.media import JSON, MERGE_PATCH_JSON
from api_shared.openapi.dialect import TIMESTAMP_PATTERN, component_schemas
from api_shared.openapi.headers import (
    ETAG,
    LOCATION,
    REQUEST_ID,
    REQUEST_ID_HEADER,
    RETRY_AFTER,
    WWW_AUTHENTICATE,
)
from api_shared.openapi.operations import change_operation, get_operation, list_operation
from api_shared.openapi.parameters import (
    UUID_LENGTH,
    cursor_parameters,
    header_parameter,
    json_body,
    json_query_parameter,
    page_parameters,
    path_id,
    string_enum,
)
from api_shared.openapi.responses import (
    BEARER_AUTH,
    bearer_auth,
    error_response_object,
    error_responses,
    response,
    response_content,
)
from api_shared.openapi.shapes import (
    CursorEnvelope,
    CursorInfo,
    Error,
    ErrorDetail,
    ItemEnvelope,
    PageEnvelope,
    PageInfo,
)
from api_shared.openapi.store import schema_ref

__all__ = [
    "BEARER_AUTH",
    "ETAG",
    "JSON",
    "LOCATION",
    "MERGE_PATCH_JSON",
    "REQUEST_ID",
    "REQUEST_ID_HEADER",
    "RETRY_AFTER",
    "TIMESTAMP_PATTERN",
    "UUID_LENGTH",
    "WWW_AUTHENTICATE",
    "CursorEnvelope",
    "CursorInfo",
    "Error",
    "ErrorDetail",
    "ItemEnvelope",
    "PageEnvelope",
    "PageInfo",
    "bearer_auth",
    "change_operation",
    "component_schemas",
    "cursor_parameters",
    "error_response_object",
    "error_responses",
    "get_operation",
    "header_parameter",
    "json_body",
    "json_query_parameter",
    "list_operation",
    "page_parameters",
    "path_id",
    "response",
    "response_content",
    "schema_ref",
    "string_enum",
]
