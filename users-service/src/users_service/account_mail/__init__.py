"""Account mail: email verification and password reset (``/api/email-verifications``,
``/api/password-reset-requests``, ``/api/password-resets``), their tokens and messages."""

from users_service.account_mail.mail import AccountMail
from users_service.account_mail.routes import accounts
from users_service.account_mail.services import (
    EmailVerificationService,
    PasswordResetService,
    ResetRequestWorker,
)
from users_service.account_mail.wiring import AccountMailPart, wire_account_mail

__all__ = [
    "AccountMail",
    "AccountMailPart",
    "EmailVerificationService",
    "PasswordResetService",
    "ResetRequestWorker",
    "accounts",
    "wire_account_mail",
]
