"""The webhook rules decide who may manage webhooks: every operation refuses a non-admin
before it touches storage, whatever route (or none) calls it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from api_shared.auth import Principal
from api_shared.errors import ForbiddenError
from api_shared.paging import PageRequest, Sort
from webhooks_service.schemas import EndpointCreate, EndpointPatch, SecretRotation
from webhooks_service.services import WebhookService

ENDPOINT_ID = "00000000-0000-0000-0000-000000000001"
PAGE = PageRequest(limit=20, offset=0, sort=Sort("createdAt", descending=False))
CREATE = EndpointCreate.model_validate({"url": "https://example.com/hook", "eventTypes": ["*"]})


class Untouchable:
    """A part the rules must not reach for a refused caller."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"{name} was reached for a caller who is not an admin")


def service() -> WebhookService:
    part: Any = Untouchable()
    return WebhookService(part, part, part, part, max_grace_s=60)


OPERATIONS: dict[str, Callable[[WebhookService, Principal], Awaitable[object]]] = {
    "create": lambda s, caller: s.create(caller, CREATE),
    "list_endpoints": lambda s, caller: s.list_endpoints(caller, PAGE),
    "get": lambda s, caller: s.get(caller, ENDPOINT_ID),
    "patch": lambda s, caller: s.patch(caller, ENDPOINT_ID, EndpointPatch()),
    "delete": lambda s, caller: s.delete(caller, ENDPOINT_ID),
    "rotate_secret": lambda s, caller: s.rotate_secret(caller, ENDPOINT_ID, SecretRotation()),
    "list_deliveries": lambda s, caller: s.list_deliveries(caller, ENDPOINT_ID, PAGE),
    "replay": lambda s, caller: s.replay(caller, ENDPOINT_ID, ENDPOINT_ID),
}


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_every_operation_refuses_a_caller_who_is_not_an_admin(operation: str) -> None:
    with pytest.raises(ForbiddenError, match="Only admins manage webhooks"):
        await OPERATIONS[operation](service(), Principal("someone", "customer"))


def test_an_admin_is_authorized() -> None:
    service().authorize(Principal("someone", "admin"))  # no ForbiddenError
