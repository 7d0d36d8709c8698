"""What several blueprints share in their answers: a token or a secret is never cached, and
an answer without a body is documented one way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import api_shared.openapi as spec

# RFC 6749 §5.1: a response carrying a token is never cached.
NO_STORE = {"Cache-Control": "no-store"}
CACHE_CONTROL = {"Cache-Control": {"required": True, "schema": {"type": "string"}}}
F = TypeVar("F", bound=Callable[..., Any])


def no_content(
    description: str, *errors: int, body: bool = False, status: int = 204
) -> Callable[[F], F]:
    """Document an operation that answers ``status`` (204) without a body, or one of
    ``errors``."""

    def document(handler: F) -> F:
        return spec.response(status, None, description)(
            spec.error_responses(*errors, body=body)(handler)
        )

    return document
