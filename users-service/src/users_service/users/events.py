"""The events users-service publishes, through the shared outbox: a user created, changed,
claimed, deleted.

``users.user.deleted`` carries only the id: the stream keeps events for days, and a deleted
user's name and email must not outlive them there. ``users.user.claimed`` carries only the id
too: it says that whoever held the account before has no standing any more (the owner of its
address took it back: docs/api.md#email-verification-and-password-reset), and consumers drop
what that holder set up. ``CATALOG`` declares them all: the outbox refuses any other type,
and the AsyncAPI document is built from it.
"""

from __future__ import annotations

from uuid import UUID

from api_shared.events.catalog import EventCatalog, EventSpec
from api_shared.events.outbox import Outbox
from api_shared.events.streams import USERS
from api_shared.representation import WireModel
from users_service.models import User
from users_service.users.schemas import UserPublic

SOURCE = "/users-service"
CREATED = "users.user.created"
UPDATED = "users.user.updated"
DELETED = "users.user.deleted"
CLAIMED = "users.user.claimed"


class DeletedUser(WireModel):
    """The data of ``users.user.deleted``: the id alone."""

    id: UUID


class ClaimedUser(WireModel):
    """The data of ``users.user.claimed``: the id alone."""

    id: UUID


CATALOG = EventCatalog(
    source=SOURCE,
    stream=USERS,
    events=[
        EventSpec(
            CREATED,
            UserPublic,
            "A user was created (a sign-up, or an admin created by the service); data: the user.",
        ),
        EventSpec(
            UPDATED,
            UserPublic,
            "A user's name, email, role or suspension changed (PATCH /api/users/{id}), or its "
            "email was verified (emailVerified: a verification link, or a password reset); "
            "data: the user after the change. A password change alone records none.",
        ),
        EventSpec(
            CLAIMED,
            ClaimedUser,
            "The owner of a user's email address took the account back with a password reset "
            "while the address was not verified (POST /api/password-resets): whoever held it "
            "before loses everything they set up (its API keys are revoked, its sessions "
            "ended; webhooks-service disables its endpoints and ends its event streams). "
            "Recorded just before the users.user.updated of the same change; data: its id only.",
        ),
        EventSpec(
            DELETED,
            DeletedUser,
            "A user was deleted (DELETE /api/users/{id}); data: its id only, so that a deleted "
            "user's name and email do not live on in the stream.",
        ),
    ],
)


class UserEvents:
    """Records a user's events; call inside the transaction of the change."""

    def __init__(self, outbox: Outbox | None = None) -> None:
        self.outbox = outbox or Outbox(CATALOG)

    async def created(self, user: User) -> None:
        await self.outbox.record(CREATED, str(user.id), UserPublic.model_validate(user).wire())

    async def updated(self, user: User) -> None:
        await self.outbox.record(UPDATED, str(user.id), UserPublic.model_validate(user).wire())

    async def claimed(self, user_id: UUID) -> None:
        await self.outbox.record(CLAIMED, str(user_id), ClaimedUser(id=user_id).wire())

    async def deleted(self, user_id: UUID) -> None:
        await self.outbox.record(DELETED, str(user_id), DeletedUser(id=user_id).wire())
