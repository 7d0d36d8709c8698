"""The rules of the users resource, independent of HTTP.

They are docs/api.md#users. Storage, sessions and account mail are reached through
``users_service.users.ports``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any
from uuid import UUID

from api_shared.auth import Principal, Role, require_person
from api_shared.errors import (
    EmailTakenError,
    ForbiddenError,
    InvalidCredentialsError,
    NotFoundError,
    ValidationFailedError,
)
from api_shared.ids import parse_id
from api_shared.paging import PageRequest, choice
from users_service.budgets import Throttle
from users_service.models import User
from users_service.passwords import PASSWORD_MAX_LENGTH, Passwords
from users_service.sessions import Client, Standing
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

# Wire sort names and the model fields they order by.
SORT_FIELDS = {"createdAt": "created_at", "name": "name"}
SORTS = tuple(SORT_FIELDS)
DEFAULT_SORT = "createdAt"
FILTERS = {"role": choice(*(role.value for role in Role)), "isActive": choice("true", "false")}
# Changes that end a user's sessions: whoever held the old credentials or rights is out.
SESSION_ENDING_CHANGES = frozenset({"email", "password_hash", "role"})
ADMIN_NAME = "Administrator"
# What an API key never does, whatever its scopes: a key leaked from a script's configuration
# must not lock its owner out (docs/api.md#api-keys).
CREDENTIALS_NEED_A_PERSON = "Changing a password or email needs a person's login, not an API key."
DELETION_NEEDS_A_PERSON = "Deleting one's own account needs a person's login, not an API key."
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
        if role is Role.ADMIN and not (principal and _is_admin(await self.caller(principal))):
            raise ForbiddenError("Only an admin can create an admin.")
        if data.password is not None and data.email is None:
            raise _password_needs_email()
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
        _require_lister(standing)
        return standing

    async def list_users(
        self, lister: Standing, page: PageRequest
    ) -> tuple[Sequence[UserRow], int]:
        """One page of users and how many match its filters; ``lister`` from ``lister``."""
        _require_lister(lister)
        role, is_active = page.filters.get("role"), page.filters.get("isActive")
        return await self.users.page(
            role=Role(role) if role else None,
            is_active=None if is_active is None else is_active == "true",
            order_by=page.sort.ordering(SORT_FIELDS),
            limit=page.limit,
            offset=page.offset,
        )

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
        if data.role is not None and data.role != user.role and not _is_admin(caller):
            raise ForbiddenError("Only an admin can change a role.")
        if data.is_active is not None and data.is_active != user.is_active:
            if not _is_admin(caller):
                raise ForbiddenError("Only an admin can suspend an account or lift a suspension.")
            if user.id == caller.id:
                raise ForbiddenError("An admin cannot suspend their own account.")
        changes: UserChanges = {}
        if data.name is not None and data.name != user.name:
            changes["name"] = data.name
        if "email" in data.model_fields_set and data.email != user.email:
            changes["email"] = data.email
            changes["email_verified"] = False  # the new address is not proven yet
        if data.role is not None and data.role != user.role:
            changes["role"] = data.role
        if data.is_active is not None and data.is_active != user.is_active:
            changes["is_active"] = data.is_active
        # A password is only usable with an email to log in with.
        email = changes.get("email", user.email)
        if data.password is not None:
            if email is None:
                raise _password_needs_email()
        elif email is None and user.password_hash is not None:
            raise ValidationFailedError(
                "email is required while the user has a password",
                fields={"email": "is required while the user has a password"},
            )
        if "email" in changes or data.password is not None:
            require_person(principal, CREDENTIALS_NEED_A_PERSON)
            await self._check_credentials_change(caller, user, data, changes.get("email"), client)
        if data.password is not None:
            changes["password_hash"] = await self.passwords.hash(data.password)
        if not changes:
            return user
        try:
            async with self._atomic():
                if not await self.users.update(user, changes):
                    raise _not_found()  # deleted since it was read
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
        target = _accessible_id(caller, user_id)
        if target == caller.id:
            require_person(principal, DELETION_NEEDS_A_PERSON)
            given = _required_current_password(data.current_password, "delete the account")
            await self.throttle.credential_work(client.address)
            await self._confirm_password(caller, given)
        if not await self.users.delete(target):
            raise _not_found()

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
        user_id = _accessible_id(caller, raw_id)
        return caller if user_id == caller.id else await self._find(user_id)

    async def _check_credentials_change(
        self, caller: User, user: User, data: UserUpdate, new_email: str | None, client: Client
    ) -> None:
        """Before any hashing: the current password (unless an admin acts on another user),
        then whether the new email is free (a 409 costs no Argon2 slot)."""
        confirm = user.id == caller.id or not _is_admin(caller)
        given = (
            _required_current_password(data.current_password, "change the password or email")
            if confirm
            else None
        )
        if given is not None or data.password is not None:
            await self.throttle.credential_work(client.address)  # a verification or a hash
        if given is not None:
            await self._confirm_password(user, given)
        if new_email is not None and await self.users.get_by_email(new_email) is not None:
            raise EmailTakenError()

    async def confirm_password(self, user: User, given: str, client: Client) -> None:
        """The password again, for what needs a recent login (minting an API key): charged
        like a password change's check, to ``client``'s address and to the account."""
        await self.throttle.credential_work(client.address)
        await self._confirm_password(user, given)

    async def _confirm_password(self, user: User, given: str) -> None:
        """401 when ``given`` is not the user's password; 429 once the account's budget of
        wrong ones is spent (a stolen access token guessing it, from anywhere)."""
        async with self.throttle.guessing(self.throttle.current_password(user.id)):
            # A user without a password has none to confirm: only an admin may give it one.
            if (
                len(given) > PASSWORD_MAX_LENGTH
                or user.password_hash is None
                or not await self.passwords.verify(user.password_hash, given)
            ):
                raise InvalidCredentialsError("The current password is incorrect.")

    async def _find(self, user_id: UUID) -> User:
        user = await self.users.get(user_id)
        if user is None:
            raise _not_found()
        return user


def _is_admin(caller: User | Standing) -> bool:
    return caller.role is Role.ADMIN


def _require_lister(caller: Standing) -> None:
    if not _is_admin(caller):
        raise ForbiddenError("Only an admin can list users.")


def _accessible_id(caller: User, raw_id: str) -> UUID:
    """The id ``caller`` may act on: their own, or any for an admin.

    A customer naming another id is refused whether or not it exists, so that the answer
    does not reveal which ids exist; for an admin, a malformed id simply names nothing.
    """
    user_id = parse_id(raw_id)
    if _is_admin(caller):
        if user_id is None:
            raise _not_found()
        return user_id
    if user_id is None or user_id != caller.id:
        raise ForbiddenError("You may only access your own user.")
    return user_id


def _not_found() -> NotFoundError:
    return NotFoundError("No user has this id.")


def _required_current_password(given: str | None, action: str) -> str:
    """``given``, or 400 VALIDATION_FAILED naming ``currentPassword`` when it is missing."""
    if given is None:
        raise ValidationFailedError(
            f"currentPassword is required to {action}",
            fields={"currentPassword": f"is required to {action}"},
        )
    return given


def _password_needs_email() -> ValidationFailedError:
    return ValidationFailedError(
        "password requires an email", fields={"password": "requires an email"}
    )
