"""The contract's shapes as OpenAPI 3.0: nullable fields, envelopes, errors, responses."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel
from sanic_ext.extensions.openapi.builders import OperationStore

from api_shared import errors
from api_shared.openapi import (
    TIMESTAMP_PATTERN,
    Error,
    ItemEnvelope,
    PageEnvelope,
    bearer_auth,
    component_schemas,
    error_responses,
    response,
)
from api_shared.representation import WireModel, format_timestamp


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
    # A $ref takes no siblings in 3.0: the nullable reference is wrapped.
    assert schema["properties"]["part"] == {
        "allOf": [{"$ref": "#/components/schemas/Part"}],
        "nullable": True,
    }
    assert "'null'" not in str(schema)  # JSON Schema's {"type": "null"}


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


def test_a_no_content_response_has_no_body_and_an_optional_token_allows_none() -> None:
    @response(204, None, "Deleted")
    @bearer_auth(optional=True)
    async def delete_thing() -> None: ...

    operation = documented(delete_thing)

    assert "content" not in operation["responses"]["204"]
    assert operation["security"] == [{}, {"bearerAuth": []}]
