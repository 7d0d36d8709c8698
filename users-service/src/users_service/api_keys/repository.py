"""Tortoise queries for API keys: the ``ApiKeyStore`` of ``users_service.api_keys.ports``.

Resolving a key is on every request a key authenticates: one read by the unique hash with
its owner joined, on SQL built once. ``last_used_at`` is written by a conditional UPDATE
(``… AND (last_used_at IS NULL OR last_used_at < $since)``), so a burst of requests with one
key writes it once a minute, not once each.
"""

from __future__ import annotations

from datetime import datetime
from typing import cast
from uuid import UUID

from tortoise.expressions import Q

from api_shared.paging import page_order
from api_shared.statements import Statements
from api_shared.transactions import in_transaction
from users_service.api_keys.ports import NewApiKey
from users_service.models import ApiKey, User

_WITH_OWNER = Statements()
_OWNER_COLUMNS = "api_keys__user"  # how Tortoise prefixes the joined user's columns


class ApiKeyRepository:
    async def add(self, key: NewApiKey, *, limit: int) -> ApiKey | None:
        async with in_transaction():
            # The owner's row, locked (PostgreSQL): two concurrent adds cannot both see 49.
            owner = await User.filter(id=key.user_id).select_for_update().only("id").first()
            if owner is None or await ApiKey.filter(user_id=key.user_id).count() >= limit:
                return None
            return await ApiKey.create(
                id=key.id,
                user_id=key.user_id,
                name=key.name,
                prefix=key.prefix,
                secret_hash=key.secret_hash,
                scopes=key.scopes,
                created_at=key.created_at,
                expires_at=key.expires_at,
            )

    async def with_owner(self, secret_hash: str) -> tuple[ApiKey, User] | None:
        found = await _WITH_OWNER.instances(
            ApiKey,
            "by hash",
            [secret_hash, 1],
            lambda: ApiKey.filter(secret_hash=secret_hash).select_related("user").limit(1),
            (User, _OWNER_COLUMNS),
        )
        for key, owner in found:
            return cast(ApiKey, key), cast(User, owner)
        return None

    async def get(self, key_id: UUID, user_id: UUID) -> ApiKey | None:
        return await ApiKey.filter(id=key_id, user_id=user_id).first()

    async def delete(self, key_id: UUID, user_id: UUID) -> bool:
        return await ApiKey.filter(id=key_id, user_id=user_id).delete() > 0

    async def delete_all(self, user_id: UUID) -> int:
        deleted: int = await ApiKey.filter(user_id=user_id).delete()
        return deleted

    async def page(
        self, user_id: UUID, *, order_by: str, limit: int, offset: int
    ) -> tuple[list[ApiKey], int]:
        """One page of the user's keys, and how many they hold (at most a few dozen)."""
        keys = ApiKey.filter(user_id=user_id)
        ordering = page_order(order_by)
        page = await keys.order_by(*ordering).offset(offset).limit(limit)
        return page, await keys.count()

    async def touch(self, key_id: UUID, now: datetime, *, unless_since: datetime) -> None:
        await ApiKey.filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=unless_since), id=key_id
        ).update(last_used_at=now)
