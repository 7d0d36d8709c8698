"""Request and response shapes of the users API (one per direction)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import field_serializer, field_validator

from api_shared.representation import InputModel, WireModel, format_timestamp
from users_service.models import Role


def _clean_name(value: str) -> str:
    value = value.strip()
    if not 1 <= len(value) <= 100:
        raise ValueError("must be 1 to 100 characters")
    return value


class UserCreate(InputModel):
    name: str

    _name = field_validator("name")(_clean_name)


class UserPublic(WireModel):
    id: UUID
    name: str
    email: str | None
    role: Role
    created_at: datetime
    updated_at: datetime

    @field_serializer("created_at", "updated_at")
    def _timestamp(self, value: datetime) -> str:
        return format_timestamp(value)
