"""The rules of the users resource, independent of HTTP.

They are docs/api.md#users. Storage, sessions and account mail are reached through
``users_service.users.ports``. Who may act on whom is ``access``'s, what an update changes
``changes``', the current password a credential change asks ``credentials``', and the list's
sorts and filters ``listing``'s.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any
from uuid import UUID

from api_shared.auth import Principal, Role, require_person
from api_shared.errors import EmailTakenError, ForbiddenError
from api_shared.paging import PageRequest
from users_service.budgets import Throttle
from users_service.models import User
from users_service.passwords import Passwords
from users_service.sessions import Client, Standing
from users_service.users.access import accessible_id, is_admin, not_found, require_lister
from users_service.users.changes import SESSION_ENDING_CHANGES, changes_of
from users_service.users.credentials import (
    CREDENTIALS_NEED_A_PERSON,
    DELETION_NEEDS_A_PERSON,
    CredentialChecks,
    password_needs_email,
    required_current_password,
)
from users_service.users.listing import users_page
from users_service.users.ports import (
    AccountMessages,
    EmailInUseError,
    UserChanges,
    UserRow,
    UserSessions,
    UserStore,
)
from users_service.users.schemas import UserCreate, UserDeletion, UserUpdate

logger = logging.getLogger(__name__)

ADMIN_NAME = "Administrator"
UNKNOWN_CLIENT = Client()  # a caller naming no address: charged as one unknown address
NO_DELETION_BODY = UserDeletion()


class AdminEmailTakenError(Exception):
    """The configured admin email belongs to an account that is not an admin.

    Whoever registered it first must not become admin nor lose their password to the
    configuration: the operator decides (another ADMIN_EMAIL, or promote it knowingly).
    """


class UserService:
    """Sign-up, reading, updating and deleting users, and the start-up admin.

    With ``mail`` (``account_mail.AccountMail``), a new or changed email gets a verification
    message and a password change voids the reset links already mailed, each in the change's
    transaction; without it (tools that only seed users), no message is written.
    """

    def __init__(
        self,
        users: UserStore,
        passwords: Passwords,
        sessions: UserSessions,
        throttle: Throttle,
        *,
        mail: AccountMessages | None = None,
    ) -> None:
        self.users = users
        self.passwords = passwords
        self.sessions = sessions
        self.throttle = throttle  # the budgets of ``users_service.budgets``
        self.mail = mail
        self.credentials = CredentialChecks(users, passwords, throttle)

    def _atomic(self) -> AbstractAsyncContextManager[Any]:
        """One transaction around a change and the messages it causes."""
        return self.mail.tokens.atomic() if self.mail is not None else contextlib.nullcontext()

    async def caller(self, principal: Principal) -> User:
        """The caller's own row, read now: its role, not the token's claim, decides.

        The one place where a token becomes a user: a demoted admin is a customer from the
        next request on; the token of a deleted user, or of an ended session, is refused
        (401) and that of a suspended account is 403, though every one of them stays validly
        signed until it expires. One query: the token's session by primary key, its user
        joined (``SessionService.resolve_caller``); for an API key, its owner's row.
        """
        return await self.sessions.resolve_caller(principal)

    async def sign_up(self, data: UserCreate, principal: Principal | None) -> User:
        """Anyone may sign up; only an admin may create an admin.

        A taken email is answered before the password is hashed: a 409 costs no Argon2 slot
        (the unique index still decides between concurrent sign-ups).
        """
        role = data.role or Role.CUSTOMER
        if role is Role.ADMIN and not (principal and is_admin(await self.caller(principal))):
            raise ForbiddenError("Only an admin can create an admin.")
        if data.password is not None and data.email is None:
            raise password_needs_email()
        if data.email is not None and await self.users.get_by_email(data.email) is not None:
            raise EmailTakenError()
        password_hash = (
            await self.passwords.hash(data.password) if data.password is not None else None
        )
        try:
            async with self._atomic():
                user = await self.users.add(
                    name=data.name, email=data.email, password_hash=password_hash, role=role
                )
                if self.mail is not None:
                    await self.mail.send_verification(user)
                return user
        except EmailInUseError:
            raise EmailTakenError() from None

    async def lister(self, principal: Principal) -> Standing:
        """The caller, once known to be an admin, who alone may list users (403 otherwise).

        Asked before the list's query is parsed: a customer learns nothing of the parameters.
        The caller's role is all this needs: the narrow caller check (no User).
        """
        standing = await self.sessions.caller_standing(principal)
        require_lister(standing)
        return standing

    async def list_users(
        self, lister: Standing, page: PageRequest
    ) -> tuple[Sequence[UserRow], int]:
        """One page of users and how many match its filters; ``lister`` from ``lister``."""
        require_lister(lister)
        return await users_page(self.users, page)

    async def get(self, principal: Principal, user_id: str) -> User:
        return await self._target(await self.caller(principal), user_id)

    async def update(
        self,
        principal: Principal,
        user_id: str,
        data: UserUpdate,
        *,
        client: Client = UNKNOWN_CLIENT,
    ) -> User:
        """Apply ``data``; changing one's own password or email needs the current password.

        A token alone (stolen from a log, a browser) must not be enough to lock the owner
        out for good; an admin changing another user's is exempt (that is the admin's job).
        Password work is charged to ``client``'s address (a caller naming none is one
        unknown address), wrong current passwords to the account (``users_service.budgets``),
        before any hashing. An API key never changes a password or an email (403).
        """
        caller = await self.caller(principal)
        user = await self._target(caller, user_id)
        changes = changes_of(caller, user, data)
        if "email" in changes or data.password is not None:
            require_person(principal, CREDENTIALS_NEED_A_PERSON)
            await self.credentials.check_change(caller, user, data, changes.get("email"), client)
        if data.password is not None:
            changes["password_hash"] = await self.passwords.hash(data.password)
        if not changes:
            return user
        try:
            async with self._atomic():
                if not await self.users.update(user, changes):
                    raise not_found()  # deleted since it was read
                await self._mail_changes(user, changes)
        except EmailInUseError:
            raise EmailTakenError() from None
        if changes.get("is_active") is False:
            await self.sessions.end_all(user.id)
        elif SESSION_ENDING_CHANGES & changes.keys():
            # The caller's own session survives a change they make to their own account.
            own = principal.session_id if user.id == caller.id else None
            await self.sessions.end_all(user.id, keep=own)
        return user

    async def delete(
        self,
        principal: Principal,
        user_id: str,
        data: UserDeletion = NO_DELETION_BODY,
        *,
        client: Client = UNKNOWN_CLIENT,
    ) -> None:
        """Delete a user: oneself with the current password, anyone for an admin.

        Deleting one's own account is as final as a password change: a token alone must not
        do it (admins deleting their own account included), nor an API key.
        """
        caller = await self.caller(principal)
        target = accessible_id(caller, user_id)
        if target == caller.id:
            require_person(principal, DELETION_NEEDS_A_PERSON)
            given = required_current_password(data.current_password, "delete the account")
            await self.credentials.confirm(caller, given, client)
        if not await self.users.delete(target):
            raise not_found()

    async def ensure_admin(self, email: str, password: str) -> None:
        """Make sure an admin with ``email`` exists, created with ``password`` if it does not;
        safe to run concurrently.

        The password is the first one only: an existing admin keeps the password it has (a
        rotation through the API must survive a restart). An existing account that is not an
        admin is never promoted nor has its password reset: AdminEmailTakenError, for the
        caller to report.
        """
        user = await self.users.get_by_email(email)
        if user is None:
            password_hash = await self.passwords.hash(password)
            try:
                await self.users.add(
                    name=ADMIN_NAME, email=email, password_hash=password_hash, role=Role.ADMIN
                )
            except EmailInUseError:
                user = await self.users.get_by_email(email)  # another replica created it
            else:
                logger.info("created the configured admin", extra={"email": email})
                return
        if user is None:
            raise RuntimeError("the configured admin was deleted while it was being ensured")
        if user.role is not Role.ADMIN:
            raise AdminEmailTakenError(email)

    async def _mail_changes(self, user: User, changes: UserChanges) -> None:
        """A new email voids every token mailed before and gets its verification message; a
        new password voids reset links and mails the notice of what still works."""
        if self.mail is None:
            return
        if "email" in changes:
            await self.mail.email_changed(user)
        if "password_hash" in changes:
            await self.mail.void_resets(user.id)
            await self.mail.send_password_notice(user)

    async def _target(self, caller: User, raw_id: str) -> User:
        """The user ``caller`` names and may act on; the caller's own row is not read twice."""
        user_id = accessible_id(caller, raw_id)
        return caller if user_id == caller.id else await self._find(user_id)

    async def confirm_password(self, user: User, given: str, client: Client) -> None:
        """The password again, for what needs a recent login (minting an API key): charged
        like a password change's check, to ``client``'s address and to the account."""
        await self.credentials.confirm(user, given, client)

    async def _find(self, user_id: UUID) -> User:
        user = await self.users.get(user_id)
        if user is None:
            raise not_found()
        return user
