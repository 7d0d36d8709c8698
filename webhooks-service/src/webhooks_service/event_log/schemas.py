"""The shape of the event log's events, for the OpenAPI document: the stored document is
answered as it is (``event_log.presenter``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

# Absent from some events: a redacted event's data (personal_data), a webhooks-service
# event's sequence (endpoints.own_events).
_OPTIONAL_ATTRIBUTES = ("datacontenttype", "data", "sequence")


def _optional_attributes(schema: dict[str, Any]) -> None:
    """Response schemas require every field (api_shared.openapi.dialect): not these."""
    required = schema.get("required")
    if isinstance(required, list):
        schema["required"] = [name for name in required if name not in _OPTIONAL_ATTRIBUTES]


class EventPublic(BaseModel):
    """An event of the event log (``GET /api/events``): the CloudEvents 1.0 document as
    delivered (docs/api.md#delivery). Documentation only: the stored document is answered
    as it is."""

    model_config = ConfigDict(json_schema_extra=_optional_attributes)

    specversion: Literal["1.0"]
    id: str = Field(description="Unique per event: the key to de-duplicate on (webhook-id).")
    source: str = Field(examples=["/orders-service"])
    type: str = Field(examples=["orders.order.created"])
    subject: str = Field(description="The resource's id: an order's, a user's, an endpoint's.")
    time: str = Field(json_schema_extra={"format": "date-time"})
    datacontenttype: Literal["application/json"] | SkipJsonSchema[None] = None
    data: dict[str, Any] | SkipJsonSchema[None] = Field(
        default=None,
        description="What the event carries; absent once its user was deleted (redacted).",
    )
    sequence: int | SkipJsonSchema[None] = Field(
        default=None,
        json_schema_extra={"minimum": 1},
        description="1, 2, 3… per subject, as published; absent from webhooks-service's own.",
    )
