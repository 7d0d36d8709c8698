"""The input fields several resources' schemas share: a name, an email, a password, the
current password, and the rule that a field sent may not be null."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from api_shared import validation
from api_shared.text import SAFE_TEXT_PATTERN, check_safe_text
from users_service.emails import EMAIL_MAX_LENGTH, NOT_SPECIAL_USE_PATTERN
from users_service.passwords import PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH

NAME_MAX_LENGTH = 100

# What the validators check, for the API documentation (they stay the source of truth).
NAME_SCHEMA: dict[str, Any] = {
    "minLength": 1,
    "maxLength": NAME_MAX_LENGTH,
    # None of api_shared.text's characters, and not only whitespace.
    "pattern": SAFE_TEXT_PATTERN,
}
EMAIL_SCHEMA: dict[str, Any] = {
    "format": "email",
    "maxLength": EMAIL_MAX_LENGTH,
    "pattern": NOT_SPECIAL_USE_PATTERN,
}
PASSWORD_SCHEMA: dict[str, Any] = {
    "minLength": PASSWORD_MIN_LENGTH,
    "maxLength": PASSWORD_MAX_LENGTH,
}
CURRENT_PASSWORD_SCHEMA: dict[str, Any] = {
    "description": "The caller's password: required with `password` or `email` when "
    "changing one's own user (not when an admin changes another user)",
    # No password is longer; a longer one is simply wrong (compared, not validated).
    "maxLength": PASSWORD_MAX_LENGTH,
}


def clean_name(value: str) -> str:
    # Anywhere, ends included: a name is pasted into pages and messages (api_shared.text).
    value = check_safe_text(value).strip()
    if not 1 <= len(value) <= NAME_MAX_LENGTH:
        raise ValueError(f"must be 1 to {NAME_MAX_LENGTH} characters")
    return value


def not_null(*fields: str) -> Callable[[object], object]:
    """api_shared.validation.not_null in users-service's words: "must not be null"."""
    return validation.not_null(*fields, message="must not be null")
