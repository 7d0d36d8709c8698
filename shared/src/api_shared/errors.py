"""The error contract: one exception class per code of docs/api.md#errors.

Every error any service answers with is one of these, rendered by
``api_shared.error_handler`` as ``{"error": {"code", "message", "fields"?}}``.

ApiError
 ├── MalformedJsonError ............ 400 MALFORMED_JSON
 ├── ValidationFailedError ......... 400 VALIDATION_FAILED
 ├── BadSortError .................. 400 BAD_SORT
 ├── BadFilterError ................ 400 BAD_FILTER
 ├── UnauthenticatedError .......... 401 UNAUTHENTICATED (+ WWW-Authenticate)
 ├── InvalidCredentialsError ....... 401 INVALID_CREDENTIALS (+ WWW-Authenticate)
 ├── ForbiddenError ................ 403 FORBIDDEN
 │    └── ReauthenticationRequiredError 403 REAUTHENTICATION_REQUIRED
 ├── NotFoundError ................. 404 NOT_FOUND
 ├── MethodNotAllowedError ......... 405 METHOD_NOT_ALLOWED (+ Allow)
 ├── NotAcceptableError ............ 406 NOT_ACCEPTABLE
 ├── ConflictError ................. 409 CONFLICT (fallback for a unique violation)
 │    ├── EmailTakenError .......... 409 EMAIL_TAKEN
 │    ├── InvalidStateError ........ 409 INVALID_STATE
 │    └── IdempotencyInProgressError 409 IDEMPOTENCY_IN_PROGRESS
 ├── PreconditionFailedError ....... 412 PRECONDITION_FAILED
 ├── PayloadTooLargeError .......... 413 PAYLOAD_TOO_LARGE
 ├── UnsupportedMediaTypeError ..... 415 UNSUPPORTED_MEDIA_TYPE
 ├── UnknownBookError .............. 422 UNKNOWN_BOOK
 ├── IdempotencyKeyReusedError ..... 422 IDEMPOTENCY_KEY_REUSED
 ├── RateLimitedError .............. 429 RATE_LIMITED (+ Retry-After)
 ├── InternalError ................. 500 INTERNAL
 ├── BadGatewayError ............... 502 BAD_GATEWAY
 ├── UnavailableError .............. 503 UNAVAILABLE (+ Retry-After)
 └── UpstreamTimeoutError .......... 504 UPSTREAM_TIMEOUT
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar


class ApiError(Exception):
    """Base of every contract error; subclasses set ``code``, ``status`` and ``message``."""

    code: ClassVar[str] = "INTERNAL"
    status: ClassVar[int] = 500
    message: str = "An unexpected error occurred."

    def __init__(
        self,
        message: str | None = None,
        *,
        fields: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.message = message or type(self).message
        self.fields = dict(fields) if fields else None
        self.headers = dict(headers) if headers else {}
        super().__init__(self.message)

    def body(self) -> dict[str, Any]:
        """The contract's error body for this error."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.fields:
            error["fields"] = self.fields
        return {"error": error}


class MalformedJsonError(ApiError):
    code, status = "MALFORMED_JSON", 400
    message = "The request body is not a JSON object."


class ValidationFailedError(ApiError):
    code, status = "VALIDATION_FAILED", 400
    message = "The request is not valid."


class BadSortError(ApiError):
    code, status = "BAD_SORT", 400
    message = "The sort field is not allowed."


class BadFilterError(ApiError):
    code, status = "BAD_FILTER", 400
    message = "The filter is not allowed."


class UnauthenticatedError(ApiError):
    code, status = "UNAUTHENTICATED", 401
    message = "A valid bearer token is required."

    def __init__(self, message: str | None = None, *, token_sent: bool = False) -> None:
        # RFC 6750 §3: name the error only when a token was presented.
        challenge = 'Bearer error="invalid_token"' if token_sent else "Bearer"
        super().__init__(message, headers={"WWW-Authenticate": challenge})


class InvalidCredentialsError(ApiError):
    code, status = "INVALID_CREDENTIALS", 401
    message = "The email or password is incorrect."

    def __init__(self, message: str | None = None) -> None:
        # RFC 9110 §15.5.2: a 401 always names a scheme; a wrong password (a login's, or a
        # current password on a bearer route) is no token error, so the plain challenge.
        super().__init__(message, headers={"WWW-Authenticate": "Bearer"})


class ForbiddenError(ApiError):
    code, status = "FORBIDDEN", 403
    message = "You are not allowed to do this."


class ReauthenticationRequiredError(ForbiddenError):
    """403 for a person's login that authenticated too long ago for what it asks (minting
    an API key, say): the password again (``currentPassword``) or a new login lets it."""

    code = "REAUTHENTICATION_REQUIRED"
    message = "This needs a recent login: send currentPassword, or log in again."


class NotFoundError(ApiError):
    code, status = "NOT_FOUND", 404
    message = "The resource was not found."


class MethodNotAllowedError(ApiError):
    code, status = "METHOD_NOT_ALLOWED", 405
    message = "The method is not allowed on this resource."

    def __init__(self, allowed: list[str] | tuple[str, ...], message: str | None = None) -> None:
        super().__init__(message, headers={"Allow": ", ".join(sorted(set(allowed)))})


class NotAcceptableError(ApiError):
    code, status = "NOT_ACCEPTABLE", 406
    message = "This resource is only available as application/json."


class ConflictError(ApiError):
    code, status = "CONFLICT", 409
    message = "The request conflicts with the current state of the resource."


class EmailTakenError(ConflictError):
    code = "EMAIL_TAKEN"
    message = "Another user already has this email."


class InvalidStateError(ConflictError):
    code = "INVALID_STATE"
    message = "The current status does not allow this change."


class IdempotencyInProgressError(ConflictError):
    code = "IDEMPOTENCY_IN_PROGRESS"
    message = "A request with this Idempotency-Key is still being processed."


class PreconditionFailedError(ApiError):
    code, status = "PRECONDITION_FAILED", 412
    message = "If-Match does not match the current ETag."


class PayloadTooLargeError(ApiError):
    code, status = "PAYLOAD_TOO_LARGE", 413
    message = "The request body is too large."


class UnsupportedMediaTypeError(ApiError):
    code, status = "UNSUPPORTED_MEDIA_TYPE", 415
    message = "The request body must be application/json."


class UnknownBookError(ApiError):
    code, status = "UNKNOWN_BOOK", 422
    message = "An order item names a book the catalog does not have."


class IdempotencyKeyReusedError(ApiError):
    code, status = "IDEMPOTENCY_KEY_REUSED", 422
    message = "This Idempotency-Key was used with a different request body."


class RateLimitedError(ApiError):
    code, status = "RATE_LIMITED", 429
    message = "Too many requests."

    def __init__(
        self,
        retry_after_s: int,
        message: str | None = None,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message, headers={**(headers or {}), "Retry-After": str(retry_after_s)})


class InternalError(ApiError):
    code, status = "INTERNAL", 500
    message = "An unexpected error occurred."


class BadGatewayError(ApiError):
    code, status = "BAD_GATEWAY", 502
    message = "An upstream service answered with something unusable."


class UnavailableError(ApiError):
    code, status = "UNAVAILABLE", 503
    message = "A dependency is unavailable; try again shortly."

    def __init__(self, message: str | None = None, *, retry_after_s: int = 1) -> None:
        super().__init__(message, headers={"Retry-After": str(retry_after_s)})


class UpstreamTimeoutError(ApiError):
    code, status = "UPSTREAM_TIMEOUT", 504
    message = "An upstream service did not answer in time."
