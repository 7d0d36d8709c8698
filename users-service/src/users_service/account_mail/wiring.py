"""Account mail's part of the service's wiring: the tokens and their messages, the rules of
verification and reset, the worker of queued reset requests, and the mail sender."""

from __future__ import annotations

from dataclasses import dataclass

from api_shared.context import Resource
from api_shared.mail.outbox import MailOutbox
from api_shared.mail.sender import MailSender
from users_service.account_mail.mail import AccountMail
from users_service.account_mail.repository import AccountTokenRepository
from users_service.account_mail.services import (
    EmailVerificationService,
    PasswordResetService,
    ResetRequestWorker,
)
from users_service.account_mail.templates import Links
from users_service.api_keys import ApiKeyStore
from users_service.budgets import Throttle
from users_service.passwords import Passwords
from users_service.settings import Settings
from users_service.users import UserSessions, UserStore


@dataclass(frozen=True, slots=True)
class AccountMailPart:
    mail: AccountMail  # what the user rules write their messages with
    verification: EmailVerificationService
    resets: PasswordResetService
    worker: ResetRequestWorker
    sender: MailSender

    @property
    def resources(self) -> tuple[Resource, ...]:
        return (self.worker, self.sender)


def wire_account_mail(
    settings: Settings,
    users: UserStore,
    sessions: UserSessions,
    passwords: Passwords,
    throttle: Throttle,
    *,
    keys: ApiKeyStore,
) -> AccountMailPart:
    mail = AccountMail(
        AccountTokenRepository(),
        MailOutbox(domain=settings.mail_domain),
        Links(settings.frontend_url),
        settings.recovery_policy,
        keys=keys,
    )
    resets = PasswordResetService(mail, users, sessions, passwords, throttle)
    return AccountMailPart(
        mail=mail,
        verification=EmailVerificationService(mail, users),
        resets=resets,
        # Every replica handles the queue (SKIP LOCKED) and sends mail (each row once).
        worker=ResetRequestWorker(
            resets,
            interval_s=settings.reset_request_interval_s,
            purge_every_s=settings.session_purge_interval_s,
        ),
        sender=MailSender(settings),
    )
