"""Request and response shapes of the endpoint API (one per direction), separate from the ORM."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

import orjson
from pydantic import Field, field_serializer, field_validator
from pydantic.json_schema import SkipJsonSchema

from api_shared.representation import InputModel, WireModel, format_timestamp
from api_shared.validation import not_null
from webhooks_service.addresses import MAX_URL_LENGTH
from webhooks_service.endpoints.event_types import ENTRIES, MAX_ENTRIES, entry_problem
from webhooks_service.models import (
    Attempt,
    Audience,
    Delivery,
    DeliveryStatus,
    DisabledReason,
    Endpoint,
)
from webhooks_service.settings import MAX_GRACE_S

MAX_DESCRIPTION_LENGTH = 500
EVENT_TYPES_SCHEMA: dict[str, Any] = {
    "minItems": 1,
    "maxItems": MAX_ENTRIES,
    "items": {"type": "string", "enum": list(ENTRIES)},
}
EXAMPLE_URL = "https://example.com/webhooks/orders"


def _check_event_types(entries: list[str]) -> list[str]:
    if not 1 <= len(entries) <= MAX_ENTRIES:
        raise ValueError(f"must have 1 to {MAX_ENTRIES} entries")
    for index, entry in enumerate(entries):
        problem = entry_problem(entry)
        if problem is not None:
            raise ValueError(f"entry {index} ({entry!r}) {problem}")
    return list(dict.fromkeys(entries))  # in order, each once


# The enum from its JSON string (strict mode would take only an Audience instance).
LenientAudience = Annotated[Audience, Field(strict=False)]
AUDIENCE_DESCRIPTION = (
    "Whose events it receives: all (every event of its types; admins only) or owner (only "
    "the events about its owner's own orders and account). Fixed at creation."
)


class EndpointCreate(InputModel):
    """``POST /api/webhooks``: ``{url, eventTypes, description?, audience?}``."""

    url: str = Field(max_length=MAX_URL_LENGTH, examples=[EXAMPLE_URL])
    event_types: list[str] = Field(
        json_schema_extra=EVENT_TYPES_SCHEMA, examples=[["orders.order.shipped", "users.*"]]
    )
    description: str = Field(default="", max_length=MAX_DESCRIPTION_LENGTH)
    audience: LenientAudience | SkipJsonSchema[None] = Field(
        default=None,
        description=AUDIENCE_DESCRIPTION + " By default all for an admin, owner for anyone else.",
    )

    _null = not_null("audience")
    _event_types = field_validator("event_types")(_check_event_types)


class EndpointPatch(InputModel):
    """``PATCH /api/webhooks/{id}``: any of url, eventTypes, description, enabled (absent:
    unchanged)."""

    url: str | SkipJsonSchema[None] = Field(default=None, max_length=MAX_URL_LENGTH)
    event_types: list[str] | SkipJsonSchema[None] = Field(
        default=None, json_schema_extra=EVENT_TYPES_SCHEMA
    )
    description: str | SkipJsonSchema[None] = Field(default=None, max_length=MAX_DESCRIPTION_LENGTH)
    enabled: bool | SkipJsonSchema[None] = Field(
        default=None,
        description=(
            "true: the endpoint takes deliveries again (an all endpoint's owner becomes the "
            "caller, an admin; an owner endpoint keeps its owner); false: it takes none until "
            "it is enabled again."
        ),
    )

    _null = not_null("url", "event_types", "description", "enabled")
    _event_types = field_validator("event_types")(_check_event_types)


class SecretRotation(InputModel):
    """``POST /api/webhooks/{id}/rotate-secret``, optional: ``{graceSeconds?}``."""

    grace_seconds: int | SkipJsonSchema[None] = Field(
        default=None,
        json_schema_extra={"minimum": 0, "maximum": MAX_GRACE_S},
        description=(
            "Seconds the replaced secret keeps signing beside the new one: 0 ends it at once; "
            "by default WEBHOOK_SECRET_GRACE_S (86400), and more is clamped to it (as page "
            "sizes are)."
        ),
    )

    _null = not_null("grace_seconds")

    @field_validator("grace_seconds")
    @classmethod
    def _not_negative(cls, value: int | None) -> int | None:
        if value is not None and not 0 <= value <= MAX_GRACE_S:
            raise ValueError(f"must be from 0 to {MAX_GRACE_S}")
        return value


class EndpointPublic(WireModel):
    id: UUID
    url: str
    event_types: list[str]
    description: str
    created_by: str | None = Field(
        description="The id of the user who registered it; null: registered before this was kept."
    )
    owner_id: str | None = Field(
        description=(
            "The user answerable for it: its creator, or (an all endpoint) the admin who last "
            "enabled it. When the owner is no longer an active admin (an all endpoint) or no "
            "longer an active user (either), the endpoint is disabled."
        )
    )
    enabled: bool = Field(description="false: no deliveries are made to it (they wait).")
    disabled_reason: DisabledReason | None = Field(
        description="Why it is disabled; null while it is enabled."
    )
    disabled_at: datetime | None
    previous_secret_until: datetime | None = Field(
        description=(
            "Until when the secret the last rotation replaced signs deliveries beside the "
            "current one; null: no other secret signs."
        )
    )
    created_at: datetime
    updated_at: datetime
    audience: Audience = Field(description=AUDIENCE_DESCRIPTION)

    @classmethod
    def of(cls, endpoint: Endpoint) -> EndpointPublic:
        return cls.model_validate(endpoint)

    @field_serializer("created_at", "updated_at")
    def _timestamp(self, value: datetime) -> str:
        return format_timestamp(value)

    @field_serializer("previous_secret_until", "disabled_at")
    def _optional_timestamp(self, value: datetime | None) -> str | None:
        return format_timestamp(value) if value is not None else None


class EndpointWithSecret(EndpointPublic):
    """The endpoint and its signing secret: answered once, at creation or rotation."""

    secret: str = Field(
        description="The signing secret (Standard Webhooks `whsec_…`); never shown again."
    )

    @classmethod
    def with_secret(cls, endpoint: Endpoint, secret: str) -> EndpointWithSecret:
        """The stored endpoint holds its secret sealed: the secret comes as it was made."""
        return cls.model_validate({**EndpointPublic.of(endpoint).model_dump(), "secret": secret})


class AttemptPublic(WireModel):
    attempted_at: datetime
    status_code: int | None = Field(description="The receiver's status; null: no answer.")
    error: str | None = Field(description="Why there was no answer (timeout, refused…).")
    duration_ms: int

    @field_serializer("attempted_at")
    def _timestamp(self, value: datetime) -> str:
        return format_timestamp(value)


class DeliveryPublic(WireModel):
    id: UUID
    endpoint_id: UUID
    event_id: str
    event_type: str
    subject: str
    status: DeliveryStatus
    attempt_count: int
    next_attempt_at: datetime | None
    created_at: datetime
    updated_at: datetime
    event: dict[str, Any] = Field(description="The event as delivered (CloudEvents 1.0 JSON).")
    attempts: list[AttemptPublic] = Field(description="Every attempt, oldest first.")

    @classmethod
    def of(cls, delivery: Delivery, attempts: list[Attempt]) -> DeliveryPublic:
        return cls(
            id=delivery.id,
            endpoint_id=UUID(str(delivery.endpoint_id)),
            event_id=delivery.event_id,
            event_type=delivery.event_type,
            subject=delivery.subject,
            status=delivery.status,
            attempt_count=delivery.attempt_count,
            next_attempt_at=(
                delivery.next_attempt_at if delivery.status is DeliveryStatus.PENDING else None
            ),
            created_at=delivery.created_at,
            updated_at=delivery.updated_at,
            event=orjson.loads(delivery.payload),
            attempts=[AttemptPublic.model_validate(attempt) for attempt in attempts],
        )

    @field_serializer("created_at", "updated_at")
    def _timestamp(self, value: datetime) -> str:
        return format_timestamp(value)

    @field_serializer("next_attempt_at")
    def _optional_timestamp(self, value: datetime | None) -> str | None:
        return format_timestamp(value) if value is not None else None
