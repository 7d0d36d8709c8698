"""The contract's shapes as OpenAPI 3.0: nullable fields, envelopes, errors, responses."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

from pydantic import BaseModel, ConfigDict, Field
from sanic_ext.extensions.openapi.builders import OperationStore
from sanic_ext.extensions.openapi.types import Schema

from api_shared import errors
from api_shared.openapi import (
    TIMESTAMP_PATTERN,
    WWW_AUTHENTICATE,
    Error,
    ItemEnvelope,
    PageEnvelope,
    bearer_auth,
    component_schemas,
    error_response_object,
    error_responses,
    header_parameter,
    json_query_parameter,
    list_operation,
    path_id,
    response,
    string_enum,
)
from api_shared.representation import (
    NO_NUL_PATTERN,
    NOT_BLANK_PATTERN,
    InputModel,
    WireModel,
    format_timestamp,
)


class Part(BaseModel):
    name: str


class Thing(WireModel):
    created_at: datetime
    note: str | None
    part: Part | None = None


def documented(func: Any) -> dict[str, Any]:
    operation: dict[str, Any] = OperationStore()[func].build().serialize()
    return operation


def test_a_field_that_may_be_null_is_nullable_as_openapi_3_0_says_it() -> None:
    schema = component_schemas(Thing)["Thing"]

    assert schema["properties"]["note"] == {"type": "string", "nullable": True}
    # A $ref takes no siblings in 3.0, and 3.0.3's nullable needs a type beside it: the
    # reference or a schema that takes null alone.
    assert schema["properties"]["part"] == {
        "anyOf": [
            {"$ref": "#/components/schemas/Part"},
            {"type": "string", "nullable": True, "enum": [None]},
        ]
    }
    assert "'null'" not in str(schema)  # JSON Schema's {"type": "null"}
    assert not _nullable_without_type(schema)


def _nullable_without_type(value: Any) -> bool:
    if isinstance(value, dict):
        if value.get("nullable") and "type" not in value:
            return True
        return any(_nullable_without_type(item) for item in value.values())
    if isinstance(value, list):
        return any(_nullable_without_type(item) for item in value)
    return False


class Bounded(WireModel):
    id: UUID
    created_at: datetime
    count: int = Field(ge=0, le=100)
    total: int = Field(ge=0)


def test_the_bounds_a_format_implies_are_said() -> None:
    properties = component_schemas(Bounded, response=True)["Bounded"]["properties"]

    assert properties["id"]["maxLength"] == len(str(uuid4()))
    assert properties["createdAt"]["maxLength"] == len(format_timestamp(datetime.now(UTC)))
    assert properties["count"]["format"] == "int32"
    assert properties["total"]["format"] == "int64"


def test_a_response_schema_requires_every_field_and_allows_no_other() -> None:
    schema = component_schemas(Thing, response=True)["Thing"]

    assert schema["required"] == ["createdAt", "note", "part"]
    assert schema["additionalProperties"] is False


def test_timestamps_are_documented_as_the_contract_renders_them() -> None:
    created = component_schemas(Thing, response=True)["Thing"]["properties"]["createdAt"]
    rendered = format_timestamp(datetime(2026, 11, 22, 8, 30, 15, 123456, tzinfo=UTC))

    assert created["format"] == "date-time"
    assert re.fullmatch(created["pattern"], rendered)
    assert created["pattern"] == TIMESTAMP_PATTERN


def test_envelopes_are_components_named_after_their_item() -> None:
    item = component_schemas(ItemEnvelope[Thing], response=True)
    page = component_schemas(PageEnvelope[Thing], response=True)

    assert item["ThingItem"]["required"] == ["data"]
    assert item["ThingItem"]["properties"]["data"] == {"$ref": "#/components/schemas/Thing"}
    assert page["ThingPage"]["properties"]["data"]["items"] == {
        "$ref": "#/components/schemas/Thing"
    }
    assert page["PageInfo"]["required"] == ["total", "limit", "offset"]


def test_the_error_schema_names_every_code_of_the_contract() -> None:
    schemas = component_schemas(Error)
    codes = schemas["ErrorDetail"]["properties"]["code"]["enum"]

    assert schemas["Error"]["required"] == ["error"]
    assert schemas["ErrorDetail"]["required"] == ["code", "message"]  # fields is optional
    assert {"VALIDATION_FAILED", "NOT_FOUND", "UNKNOWN_BOOK", "INTERNAL"} <= set(codes)
    assert errors.EmailTakenError.code in codes


def test_an_operation_documents_its_responses_headers_and_the_contract_errors() -> None:
    location = {"Location": {"required": True, "schema": {"type": "string"}}}

    @response(201, Thing, "Created", headers=location)
    @error_responses(409, body=True)
    @bearer_auth()
    async def create_thing() -> None: ...

    operation = documented(create_thing)
    responses = operation["responses"]

    assert set(responses) == {"201", "400", "401", "406", "409", "413", "415"}
    assert responses["201"]["headers"]["Location"]["required"] is True
    assert all("X-Request-ID" in answer["headers"] for answer in responses.values())
    assert responses["409"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"
    }
    assert "WWW-Authenticate" in responses["401"]["headers"]
    assert operation["security"] == [{"bearerAuth": []}]


def test_a_list_operation_takes_a_token_pages_and_answers_a_page_of_its_items() -> None:
    @list_operation(
        "listParts",
        "things",
        Thing,
        "A page of parts",
        sorts=("createdAt",),
        default_sort="-createdAt",
        filters={"kind": string_enum(("a", "b"))},
        path=[path_id("thing_id", "The thing's id.")],
        errors=(404,),
    )
    async def list_parts() -> None: ...

    operation = documented(list_parts)
    parameters = [(parameter["name"], parameter["in"]) for parameter in operation["parameters"]]

    assert operation["operationId"] == "listParts"
    assert operation["tags"] == ["things"]
    assert parameters == [
        ("thing_id", "path"),
        ("limit", "query"),
        ("offset", "query"),
        ("sort", "query"),
        ("kind", "query"),
    ]
    assert operation["parameters"][3]["schema"]["enum"] == ["createdAt", "-createdAt"]
    assert set(operation["responses"]) == {"200", "400", "401", "404", "406"}
    assert operation["responses"]["200"]["description"] == "A page of parts"
    assert operation["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ThingPage"
    }
    assert operation["security"] == [{"bearerAuth": []}]


def test_an_error_response_said_by_hand_is_the_one_sanic_ext_documents() -> None:
    @error_responses(409)
    @bearer_auth()
    async def change_thing() -> None: ...

    responses = documented(change_thing)["responses"]

    assert error_response_object(409) == responses["409"]
    assert error_response_object(401, WWW_AUTHENTICATE) == responses["401"]


def test_a_no_content_response_has_no_body_and_an_optional_token_allows_none() -> None:
    @response(204, None, "Deleted")
    @bearer_auth(optional=True)
    async def delete_thing() -> None: ...

    operation = documented(delete_thing)

    assert "content" not in operation["responses"]["204"]
    assert operation["security"] == [{}, {"bearerAuth": []}]


class Login(BaseModel):
    """A password is only usable with an email; a code needs a password and a phone."""

    model_config = ConfigDict(
        json_schema_extra={
            "dependentSchemas": {"password": {"properties": {"email": {"type": "string"}}}},
            "dependentRequired": {"code": ["password", "phone"]},
        }
    )

    email: str | None = None
    password: str | None = None
    code: str | None = None
    phone: str | None = None


class Signup(BaseModel):
    model_config = ConfigDict(json_schema_extra={"dependentRequired": {"password": ["email"]}})

    email: str | None = None
    password: str | None = None


def test_a_dependency_between_fields_is_said_in_the_words_of_openapi_3_0() -> None:
    schema = component_schemas(Signup)["Signup"]

    # 3.0 has no dependentRequired: "password absent, or email present"; a rule of the one
    # model (allOf), never a top-level anyOf, which generators take for a union of models.
    assert schema["allOf"] == [
        {"anyOf": [{"not": {"required": ["password"]}}, {"required": ["email"]}]}
    ]
    assert "anyOf" not in schema
    assert "dependentRequired" not in schema


def test_several_dependencies_must_all_hold() -> None:
    schema = component_schemas(Login)["Login"]

    assert schema["allOf"] == [
        {"anyOf": [{"not": {"required": ["code"]}}, {"required": ["password", "phone"]}]},
        {
            "anyOf": [
                {"not": {"required": ["password"]}},
                {"properties": {"email": {"type": "string"}}},
            ]
        },
    ]
    assert "dependentSchemas" not in schema
    assert "dependentRequired" not in schema


class Note(InputModel):
    text: str
    title: str = Field(json_schema_extra={"pattern": NOT_BLANK_PATTERN})
    kind: str = Field(json_schema_extra={"enum": ["a", "b"]})


def test_an_input_model_says_that_its_text_holds_no_nul_character() -> None:
    properties = component_schemas(Note)["Note"]["properties"]

    assert properties["text"]["pattern"] == NO_NUL_PATTERN
    # One pattern per schema: a field's own stays, the rule of every text joins it.
    assert properties["title"]["pattern"] == NOT_BLANK_PATTERN
    assert properties["title"]["allOf"] == [{"pattern": NO_NUL_PATTERN}]
    assert "pattern" not in properties["kind"]  # an enum says more already
    assert re.search(NO_NUL_PATTERN, "a note")
    assert not re.search(NO_NUL_PATTERN, "a\x00note")


def test_a_blank_text_is_blank_as_python_strips_it() -> None:
    for blank in ("", " ", "\t\n", "\x1c", "\x85", "\u3000"):
        assert not re.search(NOT_BLANK_PATTERN, blank), repr(blank)
    assert re.search(NOT_BLANK_PATTERN, " a ")


def test_a_header_can_be_required_and_a_query_parameter_can_hold_json() -> None:
    @json_query_parameter("filter", {"type": "object"}, "A JSON object")
    async def list_things() -> None: ...

    operation = documented(list_things)
    required = header_parameter("X-Thing", Schema(type="string"), "A thing", required=True)

    assert operation["parameters"] == [
        {
            "name": "filter",
            "in": "query",
            "description": "A JSON object",
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    ]
    assert required.fields["required"] is True
    assert required.fields["in"] == "header"
