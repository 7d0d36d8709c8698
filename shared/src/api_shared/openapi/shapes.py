"""The contract's bodies as pydantic models: the ``Error`` body of docs/api.md#errors and the
envelopes of docs/api.md#representation, ``ItemEnvelope[T]`` (``{data}``), ``PageEnvelope[T]``
(``{data, page}``) and ``CursorEnvelope[T]`` (``{data, page}`` of a cursor page)."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from api_shared import errors
from api_shared.paging import DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET

T = TypeVar("T", bound=BaseModel)


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

    data: list[T] = Field(json_schema_extra={"maxItems": MAX_LIMIT})  # a page at most
    page: PageInfo

    @classmethod
    def model_parametrized_name(cls, params: tuple[Any, ...]) -> str:
        return f"{params[0].__name__}Page"


class CursorInfo(BaseModel):
    model_config = ConfigDict(json_schema_extra={"additionalProperties": False})

    after: int = Field(
        ge=0, le=MAX_OFFSET, description="The position this page starts after, as applied."
    )
    limit: int = Field(ge=1, le=MAX_LIMIT, description="Page size, as applied.")
    next: int | None = Field(
        ge=1,
        description="The `after` of the next page: the last item's position; null when the "
        "page is empty (ask again with the same `after` later).",
    )
    has_more: bool = Field(alias="hasMore", description="Whether items beyond this page exist now.")


class CursorEnvelope(BaseModel, Generic[T]):
    """``{"data": [...], "page": {"after", "limit", "next", "hasMore"}}``."""

    model_config = ConfigDict(json_schema_extra={"additionalProperties": False})

    data: list[T] = Field(json_schema_extra={"maxItems": MAX_LIMIT})  # a page at most
    page: CursorInfo

    @classmethod
    def model_parametrized_name(cls, params: tuple[Any, ...]) -> str:
        return f"{params[0].__name__}CursorPage"
