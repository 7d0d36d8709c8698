"""The rules of the webhooks API: admins only, safe URLs, secrets shown once, replays."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from api_shared.auth import Principal
from api_shared.errors import ForbiddenError, InvalidStateError, NotFoundError
from api_shared.ids import parse_id
from api_shared.paging import PageRequest, choice
from api_shared.validation import validation_error
from webhooks_service.addresses import UnsafeUrlError, UrlGuard
from webhooks_service.models import Attempt, Delivery, DeliveryStatus, Endpoint
from webhooks_service.repository import DeliveryRepository, EndpointRepository
from webhooks_service.schemas import EndpointCreate, EndpointPatch
from webhooks_service.signing import new_secret

Clock = Callable[[], datetime]

SORTS = ("createdAt", "updatedAt")
DEFAULT_SORT = "createdAt"
_SORT_COLUMNS = {"createdAt": "created_at", "updatedAt": "updated_at"}
DELIVERY_SORTS = ("createdAt",)
DELIVERY_DEFAULT_SORT = "-createdAt"
DELIVERY_FILTERS = {"status": choice(*(status.value for status in DeliveryStatus))}


def utc_now() -> datetime:
    return datetime.now(UTC)


def require_admin(principal: Principal) -> None:
    if not principal.is_admin:
        raise ForbiddenError("Only admins manage webhooks.")


class WebhookService:
    def __init__(
        self,
        endpoints: EndpointRepository,
        deliveries: DeliveryRepository,
        guard: UrlGuard,
        clock: Clock = utc_now,
    ) -> None:
        self.endpoints = endpoints
        self.deliveries = deliveries
        self.guard = guard
        self.clock = clock

    async def create(self, data: EndpointCreate) -> Endpoint:
        await self._check_url(data.url)
        return await self.endpoints.create(
            url=data.url,
            event_types=data.event_types,
            description=data.description,
            secret=new_secret(),
            now=self.clock(),
        )

    async def list_endpoints(self, page: PageRequest) -> tuple[list[Endpoint], int]:
        return await self.endpoints.page(
            sort=_SORT_COLUMNS[page.sort.field],
            descending=page.sort.descending,
            limit=page.limit,
            offset=page.offset,
        )

    async def get(self, raw_id: str) -> Endpoint:
        endpoint_id = parse_id(raw_id)
        endpoint = await self.endpoints.get(endpoint_id) if endpoint_id else None
        if endpoint is None:
            raise NotFoundError("No webhook endpoint has this id.")
        return endpoint

    async def patch(self, raw_id: str, patch: EndpointPatch) -> Endpoint:
        endpoint = await self.get(raw_id)
        changes: dict[str, Any] = {name: getattr(patch, name) for name in patch.model_fields_set}
        if "url" in changes:
            await self._check_url(changes["url"])
        return await self.endpoints.update(endpoint, changes, self.clock())

    async def delete(self, raw_id: str) -> None:
        endpoint = await self.get(raw_id)
        await self.endpoints.delete(endpoint.id)

    async def rotate_secret(self, raw_id: str) -> Endpoint:
        """A new secret, in force for every delivery from now on; the old one stops at once."""
        endpoint = await self.get(raw_id)
        return await self.endpoints.update(endpoint, {"secret": new_secret()}, self.clock())

    async def list_deliveries(
        self, raw_id: str, page: PageRequest
    ) -> tuple[list[tuple[Delivery, list[Attempt]]], int]:
        endpoint = await self.get(raw_id)
        status = page.filters.get("status")
        rows, total = await self.deliveries.page(
            endpoint.id,
            status=DeliveryStatus(status) if status else None,
            descending=page.sort.descending,
            limit=page.limit,
            offset=page.offset,
        )
        attempts = await self.deliveries.attempts_of(rows)
        return [(row, attempts[row.id]) for row in rows], total

    async def replay(self, raw_id: str, raw_delivery_id: str) -> tuple[Delivery, list[Attempt]]:
        """Send a finished (failed or delivered) delivery again, now, with a fresh schedule."""
        endpoint = await self.get(raw_id)
        delivery_id = parse_id(raw_delivery_id)
        delivery = await self.deliveries.get(endpoint.id, delivery_id) if delivery_id else None
        if delivery is None:
            raise NotFoundError("This endpoint has no delivery with this id.")
        if not await self.deliveries.replay(delivery, self.clock()):
            raise InvalidStateError(
                "The delivery is still pending: it is retried on its own schedule."
            )
        await delivery.refresh_from_db()
        attempts = await self.deliveries.attempts_of([delivery])
        return delivery, attempts[delivery.id]

    async def _check_url(self, url: str) -> None:
        try:
            await self.guard.check(url)
        except UnsafeUrlError as error:
            raise validation_error({"url": str(error)}) from None
