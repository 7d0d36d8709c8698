"""OpenAPI 3.0 documentation of the contract, in three parts:

- ``dialect``: pydantic models as OpenAPI 3.0 component schemas (``component_schemas``);
- ``shapes``: the contract's bodies (``Error``, ``ItemEnvelope[T]``, ``PageEnvelope[T]``);
- ``operations``: sanic-ext decorators and parameters every service documents alike (and
  the error responses as plain objects, for a document put together by hand).

The names services use are re-exported here, so ``from api_shared.openapi import ...`` reads
as one vocabulary.
"""

from __future__ import annotations

from api_shared.media import JSON, MERGE_PATCH_JSON
from api_shared.openapi.dialect import TIMESTAMP_PATTERN, component_schemas
from api_shared.openapi.operations import (
    BEARER_AUTH,
    ETAG,
    LOCATION,
    REQUEST_ID,
    REQUEST_ID_HEADER,
    RETRY_AFTER,
    UUID_LENGTH,
    WWW_AUTHENTICATE,
    bearer_auth,
    cursor_parameters,
    error_response_object,
    error_responses,
    header_parameter,
    json_body,
    json_query_parameter,
    list_operation,
    page_parameters,
    path_id,
    response,
    response_content,
    schema_ref,
    string_enum,
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
    "component_schemas",
    "cursor_parameters",
    "error_response_object",
    "error_responses",
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
