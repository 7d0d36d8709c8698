"""HTTP handlers of email verification and password reset: parse, call the service, answer."""

from __future__ import annotations

from typing import Protocol

from sanic import Blueprint, Request
from sanic.response import HTTPResponse, empty
from sanic_ext import openapi

import api_shared.openapi as spec
from api_shared.auth import Access
from api_shared.validation import parse_body
from users_service.account_mail.schemas import (
    EmailVerificationCreate,
    PasswordResetCreate,
    PasswordResetRequestCreate,
)
from users_service.account_mail.services import EmailVerificationService, PasswordResetService
from users_service.responses import no_content
from users_service.sessions import caller_of, client_of

accounts = Blueprint("accounts", url_prefix="/api")

# What an API key never does, whatever its scopes (docs/api.md#api-keys).
VERIFICATION_NEEDS_A_PERSON = (
    "Asking for a verification message needs a person's login, not an API key."
)
# Who may ask for a verification message: a person's login, never an API key.
A_PERSON = Access(person=VERIFICATION_NEEDS_A_PERSON)


class _Context(Protocol):
    """What these handlers read of the service's context."""

    @property
    def verification(self) -> EmailVerificationService: ...
    @property
    def resets(self) -> PasswordResetService: ...


def _context(request: Request) -> _Context:
    context: _Context = request.app.ctx.context
    return context


@accounts.post("/email-verifications")
@openapi.definition(
    operation="verifyEmail", tag="accounts", body=spec.json_body(EmailVerificationCreate)
)
@no_content("The address the token was mailed to is verified", 429, body=True)
async def verify_email(request: Request) -> HTTPResponse:
    """Redeem the token of a verification message (public: the link may be opened anywhere).

    A token works once, until it expires (EMAIL_VERIFICATION_TTL_S, 2 days) or the user's
    email changes; any other is 400 VALIDATION_FAILED naming `token`. The user's
    `emailVerified` becomes true (a `users.user.updated` event says so).
    """
    body = parse_body(request, EmailVerificationCreate)
    await _context(request).verification.verify(body.token)
    return empty()


@accounts.post("/email-verification-requests")
@openapi.definition(operation="requestEmailVerification", tag="accounts")
@no_content("A new verification message is on its way", 403, 409, 429, status=202)
@spec.bearer_auth()
async def request_email_verification(request: Request) -> HTTPResponse:
    """Mail the caller a new verification link (earlier ones keep working until they expire).

    409 INVALID_STATE when the caller has no email or it is verified already; 429
    RATE_LIMITED past VERIFICATION_MAILS_PER_HOUR messages an hour (the sign-up's counts).
    An API key is 403 FORBIDDEN.
    """
    _, user = await caller_of(request, A_PERSON)
    await _context(request).verification.resend(user)
    return empty(status=202)


@accounts.post("/password-reset-requests")
@openapi.definition(
    operation="requestPasswordReset",
    tag="accounts",
    body=spec.json_body(PasswordResetRequestCreate),
)
@no_content(
    "Accepted: if an account has this address, a reset link is mailed to it",
    429,
    body=True,
    status=202,
)
async def request_password_reset(request: Request) -> HTTPResponse:
    """Ask for a reset link (public). The answer is the same 202, in the same time, whether
    or not an account has the address: the request is queued and handled afterwards.

    At most PASSWORD_RESET_MAILS_PER_HOUR messages an hour go to one address and to one
    account; requests past it are accepted and dropped. A suspended account gets none.
    """
    body = parse_body(request, PasswordResetRequestCreate)
    await _context(request).resets.request(body.email)
    return empty(status=202)


@accounts.post("/password-resets")
@openapi.definition(
    operation="resetPassword", tag="accounts", body=spec.json_body(PasswordResetCreate)
)
@no_content("The password is set; every session of the account is over", 403, 429, 503, body=True)
async def reset_password(request: Request) -> HTTPResponse:
    """Set a new password with the token of a reset message (public).

    The token works once, within PASSWORD_RESET_TTL_S (30 minutes, at most an hour), and
    stops working when a newer reset is requested or the password changes; any other is 400
    VALIDATION_FAILED naming `token`. The password follows sign-up's rules. Every session of
    the account ends (their refresh tokens are refused) and the address counts as verified.
    403 FORBIDDEN for a suspended account.
    """
    body = parse_body(request, PasswordResetCreate)
    await _context(request).resets.reset(body.token, body.password, client_of(request))
    return empty()
