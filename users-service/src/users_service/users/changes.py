"""An update's changes: who may make them, and what they come to (docs/api.md#users)."""

from __future__ import annotations

from api_shared.errors import ForbiddenError, ValidationFailedError
from users_service.models import User
from users_service.users.access import is_admin
from users_service.users.credentials import password_needs_email
from users_service.users.ports import UserChanges
from users_service.users.schemas import UserUpdate

# Changes that end a user's sessions: whoever held the old credentials or rights is out.
SESSION_ENDING_CHANGES = frozenset({"email", "password_hash", "role"})


def changes_of(caller: User, user: User, data: UserUpdate) -> UserChanges:
    """What ``data`` changes of ``user``, once ``caller`` may change it; the new password's
    hash is not among them (it is computed once the credentials are checked)."""
    if data.role is not None and data.role != user.role and not is_admin(caller):
        raise ForbiddenError("Only an admin can change a role.")
    if data.is_active is not None and data.is_active != user.is_active:
        if not is_admin(caller):
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
            raise password_needs_email()
    elif email is None and user.password_hash is not None:
        raise ValidationFailedError(
            "email is required while the user has a password",
            fields={"email": "is required while the user has a password"},
        )
    return changes
