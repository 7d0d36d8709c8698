"""OpenAPI 3.0 documentation of the contract's shapes, for sanic-ext's operation documents.

The services describe their operations with sanic-ext (``from sanic_ext import openapi``); this
module adds what every service documents the same way:

- pydantic models as OpenAPI 3.0 components (``schema_ref``): sanic-ext's own conversion emits
  JSON Schema 2020-12 (``{"type": "null"}``), which OpenAPI 3.0 spells ``nullable: true``;
- the envelopes of docs/api.md#representation, ``ItemEnvelope[T]`` (``{data}``) and
  ``PageEnvelope[T]`` (``{data, page}``), and the ``Error`` body of docs/api.md#errors;
- decorators declaring an operation's responses with their headers (``response``), the error
  responses the contract gives it (``error_responses``) and its bearer token (``bearer_auth``).

Nothing here knows about users or orders: the services say which statuses apply.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import core_schema
from sanic_ext.extensions.openapi.builders import OperationStore, SpecificationBuilder
from sanic_ext.extensions.openapi.definitions import (
    MediaType,
    Parameter,
    Reference,
    RequestBody,
    Response,
)
from sanic_ext.extensions.openapi.types import Schema

from api_shared import errors
from api_shared.media import JSON, MERGE_PATCH_JSON
from api_shared.paging import DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET

__all__ = [
    "BEARER_AUTH",
    "ETAG",
    "JSON",
    "LOCATION",
    "MERGE_PATCH_JSON",
    "REQUEST_ID",
    "REQUEST_ID_HEADER",
    "TIMESTAMP_PATTERN",
    "WWW_AUTHENTICATE",
    "Error",
    "ErrorDetail",
    "ItemEnvelope",
    "PageEnvelope",
    "PageInfo",
    "bearer_auth",
    "component_schemas",
    "error_responses",
    "header_parameter",
    "json_body",
    "page_parameters",
    "path_id",
    "response",
    "response_content",
    "schema_ref",
    "string_enum",
]

F = TypeVar("F", bound=Callable[..., Any])
Parameters = list[dict[str, Any] | Parameter | str]
"""What ``openapi.definition(parameter=...)`` takes."""
T = TypeVar("T", bound=BaseModel)

COMPONENTS = "#/components/schemas/{model}"
BEARER_AUTH = "bearerAuth"
TIMESTAMP_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"


# --- Schemas -------------------------------------------------------------------------------


class OpenApi30Schema(GenerateJsonSchema):
    """pydantic's JSON Schema, in the dialect of OpenAPI 3.0 (``nullable``, no ``const``)."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        inner = self.generate_inner(schema["schema"])
        if "$ref" in inner:
            return {"allOf": [inner], "nullable": True}  # siblings of $ref are ignored in 3.0
        return {**inner, "nullable": True}

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        json_schema = super().default_schema(schema)
        if json_schema.get("default", ...) is None:
            json_schema.pop("default")  # "absent" is how a client leaves it out, not null
        return json_schema

    def literal_schema(self, schema: core_schema.LiteralSchema) -> JsonSchemaValue:
        json_schema = super().literal_schema(schema)
        if "const" in json_schema:
            json_schema["enum"] = [json_schema.pop("const")]
        return json_schema


class OpenApi30ResponseSchema(OpenApi30Schema):
    """Responses carry every field, defaults included, and nothing else (no internal field)."""

    def datetime_schema(self, schema: core_schema.DatetimeSchema) -> JsonSchemaValue:
        # docs/api.md#representation: UTC, to the second (``format_timestamp``).
        return {**super().datetime_schema(schema), "pattern": TIMESTAMP_PATTERN}

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        if json_schema.get("type") == "object":
            json_schema.setdefault("additionalProperties", False)
        return json_schema

    def field_is_required(
        self,
        field: core_schema.ModelField | core_schema.DataclassField | core_schema.TypedDictField,
        total: bool,
    ) -> bool:
        return True


def _openapi30(value: Any, *, top: bool = True) -> Any:
    """The last touches of OpenAPI 3.0: ``examples: [x, ...]`` becomes ``example: x``; a
    ``$ref`` stands alone (3.0 ignores its siblings); only components keep pydantic's titles
    (a property's is its name, re-cased: "Createdat")."""
    if isinstance(value, dict):
        if "$ref" in value:
            return {"$ref": value["$ref"]}
        converted = {key: _openapi30(item, top=False) for key, item in value.items()}
        # Keywords hold lists and strings; a property of that name (in "properties") a dict.
        if isinstance(converted.get("examples"), list):
            examples = converted.pop("examples")
            if examples:
                converted.setdefault("example", examples[0])
        if not top and isinstance(converted.get("title"), str):
            del converted["title"]
        return converted
    if isinstance(value, list):
        return [_openapi30(item, top=False) for item in value]
    return value


def _component_name(model: type[BaseModel]) -> str:
    return model.__name__


def component_schemas(model: type[BaseModel], *, response: bool = False) -> dict[str, Any]:
    """``model`` and the models it uses as OpenAPI 3.0 component schemas, by name.

    ``response`` marks every field required: a response always carries all of them.
    """
    mode: JsonSchemaMode = "validation"  # datetime as date-time, not the serialiser's str
    generator = OpenApi30ResponseSchema if response else OpenApi30Schema
    schema = model.model_json_schema(
        by_alias=True, ref_template=COMPONENTS, schema_generator=generator, mode=mode
    )
    components = {name: _openapi30(value) for name, value in schema.pop("$defs", {}).items()}
    components[_component_name(model)] = _openapi30(schema)
    return components


def schema_ref(model: type[BaseModel], *, response: bool = False) -> Reference:
    """Register ``model`` (and the models it uses) as components; a reference to it."""
    spec = SpecificationBuilder()
    name = _component_name(model)
    if not spec.has_component("schemas", name):
        for component, schema in component_schemas(model, response=response).items():
            if not spec.has_component("schemas", component):
                spec.add_component("schemas", component, schema)
    return Reference(COMPONENTS.format(model=name))


# --- The contract's shapes -----------------------------------------------------------------


def _error_codes() -> list[str]:
    codes: list[str] = []
    pending: list[type[errors.ApiError]] = [errors.ApiError]
    while pending:
        error_class = pending.pop(0)
        if error_class.code not in codes:
            codes.append(error_class.code)
        pending.extend(error_class.__subclasses__())
    return sorted(codes)


_ERROR_CODES: list[JsonValue] = [*_error_codes()]


class ErrorDetail(BaseModel):
    model_config = ConfigDict(json_schema_extra={"additionalProperties": False})

    code: str = Field(json_schema_extra={"enum": _ERROR_CODES}, examples=["VALIDATION_FAILED"])
    message: str = Field(examples=["name is required"])
    fields: dict[str, str] = Field(
        default_factory=dict,
        description="Each invalid field or parameter, by its path, and what is wrong with it.",
        examples=[{"name": "is required"}],
    )


class Error(BaseModel):
    """Every error of every part of the platform (docs/api.md#errors)."""

    model_config = ConfigDict(json_schema_extra={"additionalProperties": False})

    error: ErrorDetail


class PageInfo(BaseModel):
    model_config = ConfigDict(json_schema_extra={"additionalProperties": False})

    total: int = Field(ge=0, description="Items matching the request, over all pages.")
    limit: int = Field(ge=1, le=MAX_LIMIT, description=f"Page size (default {DEFAULT_LIMIT}).")
    offset: int = Field(ge=0, description="Items skipped before this page.")


class ItemEnvelope(BaseModel, Generic[T]):
    """``{"data": item}``."""

    model_config = ConfigDict(json_schema_extra={"additionalProperties": False})

    data: T

    @classmethod
    def model_parametrized_name(cls, params: tuple[Any, ...]) -> str:
        return f"{params[0].__name__}Item"


class PageEnvelope(BaseModel, Generic[T]):
    """``{"data": [...], "page": {"total", "limit", "offset"}}``."""

    model_config = ConfigDict(json_schema_extra={"additionalProperties": False})

    data: list[T]
    page: PageInfo

    @classmethod
    def model_parametrized_name(cls, params: tuple[Any, ...]) -> str:
        return f"{params[0].__name__}Page"


# --- Operations ----------------------------------------------------------------------------


class _Response(Response):
    """sanic-ext's Response keeps only the fields it declares: this one declares headers."""

    headers: dict[str, Any]


REQUEST_ID_HEADER: Mapping[str, Any] = {
    "description": "The request's id, as received or made up; also in the logs.",
    "required": True,
    "schema": {"type": "string", "minLength": 1},
}
REQUEST_ID: Mapping[str, Any] = {"X-Request-ID": REQUEST_ID_HEADER}
WWW_AUTHENTICATE: Mapping[str, Any] = {
    "WWW-Authenticate": {
        "description": "The bearer challenge (RFC 6750).",
        "required": True,
        "schema": {"type": "string", "pattern": "^Bearer"},
    }
}
LOCATION: Mapping[str, Any] = {
    "Location": {
        "description": "The path of the created resource.",
        "required": True,
        "schema": {"type": "string"},
    }
}
ETAG: Mapping[str, Any] = {
    "ETag": {
        "description": "The strong entity tag of this version, for If-Match.",
        "required": True,
        "schema": {"type": "string", "pattern": '^"[^"]*"$'},
    }
}

# What each status means (docs/api.md#errors), for the error responses' descriptions.
ERROR_DESCRIPTIONS: Mapping[int, str] = {
    400: "MALFORMED_JSON, VALIDATION_FAILED, BAD_SORT or BAD_FILTER",
    401: "UNAUTHENTICATED: no valid bearer token (or INVALID_CREDENTIALS on login)",
    403: "FORBIDDEN: the caller may not do this",
    404: "NOT_FOUND: no such resource (a malformed id included)",
    405: "METHOD_NOT_ALLOWED: the route exists, the method does not (see Allow)",
    406: "NOT_ACCEPTABLE: the Accept header excludes application/json",
    409: "A conflict with the resource's current state",
    412: "PRECONDITION_FAILED: If-Match does not match the current ETag",
    413: "PAYLOAD_TOO_LARGE: the body is above the limit",
    415: "UNSUPPORTED_MEDIA_TYPE: the body is not JSON",
    422: "The request is well formed but names something that cannot be used",
    429: "RATE_LIMITED (see Retry-After)",
    503: "UNAVAILABLE: a dependency is down (see Retry-After)",
}
BODY_ERRORS = (400, 413, 415)  # any operation that reads a body
ALWAYS = (406,)  # any operation: content negotiation


def _operation(func: Any) -> Any:
    return OperationStore()[func]


def _content(model: type[BaseModel] | None, media_types: Iterable[str]) -> dict[str, Any] | None:
    if model is None:
        return None
    # Success bodies carry every field; an error's ``fields`` is there only when it says something.
    reference = schema_ref(model, response=model is not Error)
    return MediaType.all(dict.fromkeys(media_types, reference))  # type: ignore[no-any-return]


def response(
    status: int,
    model: type[BaseModel] | None,
    description: str,
    *,
    headers: Mapping[str, Any] | None = None,
) -> Callable[[F], F]:
    """Document a success response: its JSON body (``None``: no body) and headers."""

    def document(func: F) -> F:
        _operation(func).responses[str(status)] = _Response(
            _content(model, [JSON]),
            description=description,
            headers={**REQUEST_ID, **(headers or {})},
        )
        return func

    return document


def response_content(
    status: int,
    content: Mapping[str, Reference | Mapping[str, Any]],
    description: str,
    *,
    headers: Mapping[str, Any] | None = None,
) -> Callable[[F], F]:
    """Document a response given per media type (a schema or a reference for each).

    For answers that are not the contract's JSON alone (GraphQL's media types, a page).
    """

    def document(func: F) -> F:
        _operation(func).responses[str(status)] = _Response(
            MediaType.all(dict(content)),
            description=description,
            headers={**REQUEST_ID, **(headers or {})},
        )
        return func

    return document


def error_responses(*statuses: int, body: bool = False) -> Callable[[F], F]:
    """Document the contract's error responses (``Error`` body) of an operation.

    ``body``: the operation reads a JSON body, so it may also answer 400, 413 and 415.
    Every operation may answer 406.
    """
    every = sorted({*statuses, *ALWAYS, *(BODY_ERRORS if body else ())})

    def document(func: F) -> F:
        operation = _operation(func)
        for status in every:
            operation.responses.setdefault(str(status), _error_response(status))
        return func

    return document


def _error_response(status: int, headers: Mapping[str, Any] | None = None) -> _Response:
    description = ERROR_DESCRIPTIONS.get(status, "An error in the contract's shape")
    return _Response(
        _content(Error, [JSON]), description=description, headers={**REQUEST_ID, **(headers or {})}
    )


def bearer_auth(*, optional: bool = False) -> Callable[[F], F]:
    """The operation takes a bearer token (``optional``: it also serves callers without one)."""
    spec = SpecificationBuilder()
    if not spec.has_component("securitySchemes", BEARER_AUTH):
        spec.add_security_scheme(BEARER_AUTH, "http", bearer_format="JWT", scheme="bearer")

    def document(func: F) -> F:
        operation = _operation(func)
        if optional:
            operation.security.append({})
        operation.secured(BEARER_AUTH)
        # A token that is sent must be valid, even where none is required.
        operation.responses["401"] = _error_response(401, WWW_AUTHENTICATE)
        return func

    return document


def json_body(
    model: type[BaseModel], *, media_types: Iterable[str] = (JSON,), description: str = ""
) -> RequestBody:
    """A required JSON request body of ``model`` (for ``openapi.definition(body=...)``)."""
    return RequestBody(
        dict.fromkeys(media_types, schema_ref(model)),
        required=True,
        description=description or None,
    )


def path_id(name: str, description: str) -> Parameter:
    """A path id: a UUID (a malformed one is answered 404, docs/api.md#representation)."""
    return Parameter(
        name,
        Schema(type="string", format="uuid"),
        "path",
        description=description,
        required=True,
    )


def header_parameter(name: str, schema: Schema, description: str) -> Parameter:
    return Parameter(name, schema, "header", description=description, required=False)


def page_parameters(
    sorts: Iterable[str], default_sort: str, filters: Mapping[str, Schema] | None = None
) -> Parameters:
    """``limit``, ``offset``, ``sort`` and the list's filters (docs/api.md#paging-and-sorting)."""
    parameters: Parameters = [
        Parameter(
            "limit",
            Schema(type="integer", default=DEFAULT_LIMIT),
            "query",
            description=(
                f"Page size: default {DEFAULT_LIMIT}, above {MAX_LIMIT} becomes {MAX_LIMIT}, "
                "below 1 becomes 1; not an integer → 400 VALIDATION_FAILED."
            ),
        ),
        Parameter(
            "offset",
            Schema(type="integer", default=0),
            "query",
            description=f"Items to skip: default 0; below 0 becomes 0, above {MAX_OFFSET} that.",
        ),
        Parameter(
            "sort",
            Schema(type="string", enum=list(sorts), default=default_sort),
            "query",
            description="A field, descending with a leading '-'; another → 400 BAD_SORT.",
        ),
    ]
    for name, schema in (filters or {}).items():
        parameters.append(
            Parameter(name, schema, "query", description=f"Only items of this {name}.")
        )
    return parameters


def string_enum(values: Iterable[str]) -> Schema:
    return Schema(type="string", enum=[str(value) for value in values])
