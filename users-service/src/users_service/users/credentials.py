"""What a change of credentials asks first: the current password, within the budgets.

A token alone (stolen from a log, a browser) must not be enough to lock the owner out for
good: changing one's own password or email, or deleting one's own account, needs the current
password, and a person's login, not an API key (docs/api.md#api-keys).
"""

from __future__ import annotations

from api_shared.errors import EmailTakenError, InvalidCredentialsError, ValidationFailedError
from users_service.budgets import Throttle
from users_service.models import User
from users_service.passwords import PASSWORD_MAX_LENGTH, Passwords
from users_service.sessions import Client
from users_service.users.access import is_admin
from users_service.users.ports import UserStore
from users_service.users.schemas import UserUpdate

# What an API key never does, whatever its scopes: a key leaked from a script's configuration
# must not lock its owner out (docs/api.md#api-keys).
CREDENTIALS_NEED_A_PERSON = "Changing a password or email needs a person's login, not an API key."
DELETION_NEEDS_A_PERSON = "Deleting one's own account needs a person's login, not an API key."


class CredentialChecks:
    """The current password checked, and the password work charged, before any hashing:
    to the caller's address and, for wrong current passwords, to the account
    (``users_service.budgets``)."""

    def __init__(self, users: UserStore, passwords: Passwords, throttle: Throttle) -> None:
        self.users = users
        self.passwords = passwords
        self.throttle = throttle

    async def confirm(self, user: User, given: str, client: Client) -> None:
        """The password again, for what needs a recent login: charged to ``client``'s address
        and to the account."""
        await self.throttle.credential_work(client.address)
        await self._verify(user, given)

    async def check_change(
        self, caller: User, user: User, data: UserUpdate, new_email: str | None, client: Client
    ) -> None:
        """Before any hashing: the current password (unless an admin acts on another user),
        then whether the new email is free (a 409 costs no Argon2 slot)."""
        confirm = user.id == caller.id or not is_admin(caller)
        given = (
            required_current_password(data.current_password, "change the password or email")
            if confirm
            else None
        )
        if given is not None or data.password is not None:
            await self.throttle.credential_work(client.address)  # a verification or a hash
        if given is not None:
            await self._verify(user, given)
        if new_email is not None and await self.users.get_by_email(new_email) is not None:
            raise EmailTakenError()

    async def _verify(self, user: User, given: str) -> None:
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


def required_current_password(given: str | None, action: str) -> str:
    """``given``, or 400 VALIDATION_FAILED naming ``currentPassword`` when it is missing."""
    if given is None:
        raise ValidationFailedError(
            f"currentPassword is required to {action}",
            fields={"currentPassword": f"is required to {action}"},
        )
    return given


def password_needs_email() -> ValidationFailedError:
    return ValidationFailedError(
        "password requires an email", fields={"password": "requires an email"}
    )
