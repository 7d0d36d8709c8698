"""Tortoise queries for mailed account tokens and queued reset requests: the
``AccountTokenStore`` of ``users_service.account_mail.ports``.

Redeeming is one conditional UPDATE (``… WHERE used_at IS NULL AND expires_at > now``) whose
row count says who won, so a token works once however many requests race with it. Reset
requests are taken with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL: replicas share the queue
without handling one request twice.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any
from uuid import UUID

from tortoise import connections

from api_shared.transactions import in_transaction
from users_service.account_mail.ports import TokenPurpose
from users_service.models import AccountToken, PasswordResetRequest


class AccountTokenRepository:
    def atomic(self) -> AbstractAsyncContextManager[Any]:
        """One transaction around the calls made inside it."""
        return in_transaction()

    async def add(
        self,
        *,
        token_hash: str,
        user_id: UUID,
        purpose: TokenPurpose,
        email: str,
        now: datetime,
        expires_at: datetime,
    ) -> None:
        await AccountToken.create(
            token_hash=token_hash,
            user_id=user_id,
            purpose=purpose.value,
            email=email,
            created_at=now,
            expires_at=expires_at,
        )

    async def live(
        self, token_hash: str, purpose: TokenPurpose, now: datetime
    ) -> AccountToken | None:
        return await AccountToken.get_or_none(
            token_hash=token_hash, purpose=purpose.value, used_at=None, expires_at__gt=now
        )

    async def redeem(
        self, token_hash: str, purpose: TokenPurpose, now: datetime
    ) -> AccountToken | None:
        live = AccountToken.filter(
            token_hash=token_hash, purpose=purpose.value, used_at=None, expires_at__gt=now
        )
        if not await live.update(used_at=now):
            return None
        return await AccountToken.get_or_none(token_hash=token_hash)

    async def void(self, user_id: UUID, purpose: TokenPurpose, now: datetime) -> int:
        voided: int = await AccountToken.filter(
            user_id=user_id, purpose=purpose.value, used_at=None
        ).update(used_at=now)
        return voided

    async def count_since(
        self,
        purpose: TokenPurpose,
        since: datetime,
        *,
        user_id: UUID | None = None,
        email: str | None = None,
    ) -> int:
        query = AccountToken.filter(purpose=purpose.value, created_at__gte=since)
        if user_id is not None:
            query = query.filter(user_id=user_id)
        if email is not None:
            query = query.filter(email=email)
        return await query.count()

    async def queue_reset(self, email: str, now: datetime) -> None:
        await PasswordResetRequest.create(email=email, created_at=now)

    def pending_resets(
        self, limit: int
    ) -> AbstractAsyncContextManager[Sequence[PasswordResetRequest]]:
        return _pending_resets(limit)

    async def mark_handled(self, request_ids: Sequence[int], now: datetime) -> None:
        if request_ids:
            await PasswordResetRequest.filter(id__in=list(request_ids)).update(handled_at=now)

    async def purge(self, now: datetime, *, handled_before: datetime) -> int:
        tokens = await AccountToken.filter(expires_at__lte=now).delete()
        requests = await PasswordResetRequest.filter(handled_at__lt=handled_before).delete()
        return int(tokens) + int(requests)


@contextlib.asynccontextmanager
async def _pending_resets(limit: int) -> AsyncIterator[Sequence[PasswordResetRequest]]:
    async with in_transaction():
        query = PasswordResetRequest.filter(handled_at=None).order_by("id").limit(limit)
        if connections.get("default").capabilities.dialect == "postgres":
            query = query.select_for_update(skip_locked=True)
        yield await query
