"""pydantic models as OpenAPI 3.0 component schemas.

pydantic (and sanic-ext's own conversion) emit JSON Schema 2020-12 (``{"type": "null"}``,
``const``, ``examples``), which OpenAPI 3.0 spells ``nullable: true``, ``enum: [x]`` and
``example``; a model may also state a rule between its fields in 2020-12's
``dependentRequired``/``dependentSchemas``, which 3.0 spells with ``anyOf`` and ``not``. This
module speaks the 3.0 dialect. Nothing here knows about sanic-ext.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue
from pydantic_core import core_schema

COMPONENTS = "#/components/schemas/{model}"
TIMESTAMP_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"
TIMESTAMP_LENGTH = len("2027-01-31T12:00:00Z")  # what TIMESTAMP_PATTERN matches
UUID_LENGTH = 36
INT32 = range(-(2**31), 2**31)
# The value null and nothing else, in 3.0's words (``type`` is required beside ``nullable``).
NULL_ONLY: dict[str, Any] = {"type": "string", "nullable": True, "enum": [None]}


class OpenApi30Schema(GenerateJsonSchema):
    """pydantic's JSON Schema, in the dialect of OpenAPI 3.0 (``nullable``, no ``const``)."""

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        inner = self.generate_inner(schema["schema"])
        if "$ref" in inner:
            # Siblings of $ref are ignored in 3.0, and 3.0.3's ``nullable`` means nothing
            # without a ``type`` beside it: "the component, or null" is a union with a schema
            # that takes null alone (generators read it as ``Component | None``).
            return {"anyOf": [inner, NULL_ONLY]}
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


class ResponseSchema(GenerateJsonSchema):
    """A response's rules in plain JSON Schema: every field, defaults included, and nothing
    else (no internal field); timestamps as ``format_timestamp`` writes them. The AsyncAPI
    document (``api_shared.events.asyncapi``) describes event payloads with it as is."""

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


class OpenApi30ResponseSchema(ResponseSchema, OpenApi30Schema):
    """A response's rules (``ResponseSchema``) in the dialect of OpenAPI 3.0."""


def _openapi30(value: Any, *, top: bool = True) -> Any:
    """The last touches of OpenAPI 3.0: ``examples: [x, ...]`` becomes ``example: x``; a
    ``$ref`` stands alone (3.0 ignores its siblings); only components keep pydantic's titles
    (a property's is its name, re-cased: "Createdat"); dependencies between fields become
    ``anyOf`` clauses (``_dependencies``)."""
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
        return _dependencies(_bounded(converted))
    if isinstance(value, list):
        return [_openapi30(item, top=False) for item in value]
    return value


def _bounded(schema: dict[str, Any]) -> dict[str, Any]:
    """The bounds a schema's format implies, said (docs/api.md#limits): a UUID's and a
    timestamp's length, an integer's width (int32 when its range fits, else int64)."""
    kind = schema.get("type")
    if kind == "string" and "maxLength" not in schema:
        if schema.get("format") == "uuid":
            schema["maxLength"] = UUID_LENGTH
        elif schema.get("pattern") == TIMESTAMP_PATTERN:
            schema["maxLength"] = TIMESTAMP_LENGTH
    elif kind == "integer" and "format" not in schema:
        low, high = schema.get("minimum"), schema.get("maximum")
        fits = isinstance(low, int) and isinstance(high, int) and low in INT32 and high in INT32
        schema["format"] = "int32" if fits else "int64"
    return schema


def _dependencies(schema: dict[str, Any]) -> dict[str, Any]:
    """2020-12's dependencies in OpenAPI 3.0, which lacks them: "if ``field`` is present, the
    object also matches ``S``" is "``field`` is absent, or the object matches ``S``".

    ``dependentRequired: {field: [other, ...]}`` is the dependent schema
    ``{required: [other, ...]}``. Each dependency is an ``anyOf`` in the object's ``allOf``:
    never a top-level ``anyOf``, which generators read as a union of the clauses (a model
    with only the clause's fields) rather than as a rule on the one model.
    """
    # An object's schema: "properties" maps names to schemas, so its "type" is never a string.
    if schema.get("type") != "object" or not (
        "dependentSchemas" in schema or "dependentRequired" in schema
    ):
        return schema
    schema = dict(schema)
    dependencies = [
        *(
            (field, {"required": needed})
            for field, needed in schema.pop("dependentRequired", {}).items()
        ),
        *schema.pop("dependentSchemas", {}).items(),
    ]
    clauses = [
        {"anyOf": [{"not": {"required": [field]}}, dependent]} for field, dependent in dependencies
    ]
    schema["allOf"] = [*schema.get("allOf", []), *clauses]
    return schema


def component_name(model: type[BaseModel]) -> str:
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
    components[component_name(model)] = _openapi30(schema)
    return components
