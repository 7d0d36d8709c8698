"""The webhook rules decide who manages which endpoint: an admin every one, anyone else their
own ``owner`` endpoints; another's is 404, like one that does not exist, before anything else
is touched, whatever route (or none) calls the rules."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import pytest

from api_shared.auth import Principal
from api_shared.errors import ForbiddenError, NotFoundError
from api_shared.paging import PageRequest, Sort
from webhooks_service.endpoints.schemas import EndpointCreate, EndpointPatch, SecretRotation
from webhooks_service.endpoints.services import WebhookService, manages
from webhooks_service.models import Audience, Endpoint

ENDPOINT_ID = "00000000-0000-0000-0000-000000000001"
PAGE = PageRequest(limit=20, offset=0, sort=Sort("createdAt", descending=False))
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
ADMIN = Principal("the-admin", "admin")
ALICE = Principal("alice", "customer")
BOB = Principal("bob", "customer")


class Untouchable:
    """A part the rules must not reach for a refused caller."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"{name} was reached for a refused caller")


def _endpoint(owner: str | None, audience: Audience) -> Endpoint:
    return Endpoint(
        id=UUID(ENDPOINT_ID),
        url="https://example.com/hook",
        event_types=["*"],
        description="",
        secret="sealed",
        created_by=owner,
        owner_id=owner,
        audience=audience,
        enabled=True,
        created_at=NOW,
        updated_at=NOW,
    )


class OneEndpoint(Untouchable):
    """Endpoint storage holding one endpoint: looking it up is all a refused caller gets."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.updates: list[dict[str, Any]] = []
        self.pages: list[dict[str, Any]] = []

    async def get(self, endpoint_id: UUID) -> Endpoint | None:
        return self.endpoint if endpoint_id == self.endpoint.id else None

    async def update(self, endpoint: Endpoint, changes: dict[str, Any], now: datetime) -> Endpoint:
        self.updates.append(changes)
        return endpoint

    async def page(self, **query: Any) -> tuple[list[Endpoint], int]:
        self.pages.append(query)
        return [], 0


def service(endpoints: Any = None) -> WebhookService:
    part: Any = Untouchable()
    return WebhookService(endpoints or part, part, part, part, clock=lambda: NOW, max_grace_s=60)


OPERATIONS: dict[str, Callable[[WebhookService, Principal], Awaitable[object]]] = {
    "get": lambda s, caller: s.get(caller, ENDPOINT_ID),
    "patch": lambda s, caller: s.patch(caller, ENDPOINT_ID, EndpointPatch(enabled=True)),
    "delete": lambda s, caller: s.delete(caller, ENDPOINT_ID),
    "rotate_secret": lambda s, caller: s.rotate_secret(caller, ENDPOINT_ID, SecretRotation()),
    "list_deliveries": lambda s, caller: s.list_deliveries(caller, ENDPOINT_ID, PAGE),
    "replay": lambda s, caller: s.replay(caller, ENDPOINT_ID, ENDPOINT_ID),
    "send_test_event": lambda s, caller: s.send_test_event(caller, ENDPOINT_ID),
}


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_another_customers_endpoint_is_not_found_and_nothing_else_is_touched(
    operation: str,
) -> None:
    endpoints = OneEndpoint(_endpoint(ALICE.subject, Audience.OWNER))
    with pytest.raises(NotFoundError, match="No webhook endpoint has this id"):
        await OPERATIONS[operation](service(endpoints), BOB)
    assert endpoints.updates == []


@pytest.mark.parametrize("operation", OPERATIONS)
async def test_an_all_endpoint_is_not_found_for_a_customer_even_one_who_owns_it(
    operation: str,
) -> None:
    # An admin demoted to customer: their all endpoint carries every user's data.
    endpoints = OneEndpoint(_endpoint(ALICE.subject, Audience.ALL))
    with pytest.raises(NotFoundError):
        await OPERATIONS[operation](service(endpoints), ALICE)


@pytest.mark.parametrize(
    ("caller", "endpoint", "managed"),
    [
        (ALICE, _endpoint("alice", Audience.OWNER), True),
        (BOB, _endpoint("alice", Audience.OWNER), False),
        (ALICE, _endpoint("alice", Audience.ALL), False),
        (ALICE, _endpoint(None, Audience.OWNER), False),
        (ADMIN, _endpoint("alice", Audience.OWNER), True),
        (ADMIN, _endpoint("another-admin", Audience.ALL), True),
        (ADMIN, _endpoint(None, Audience.ALL), True),
    ],
)
def test_an_admin_manages_every_endpoint_anyone_else_their_own_owner_endpoints(
    caller: Principal, endpoint: Endpoint, managed: bool
) -> None:
    assert manages(caller, endpoint) is managed


@pytest.mark.parametrize(
    ("caller", "asked", "audience"),
    [
        (ALICE, None, Audience.OWNER),
        (ALICE, "owner", Audience.OWNER),
        (ADMIN, None, Audience.ALL),
        (ADMIN, "all", Audience.ALL),
        (ADMIN, "owner", Audience.OWNER),
    ],
)
def test_the_audience_of_a_new_endpoint(
    caller: Principal, asked: str | None, audience: Audience
) -> None:
    assert service().audience_for(caller, asked) is audience


async def test_a_customer_asking_for_every_users_events_is_refused_before_the_url_is_checked() -> (
    None
):
    data = EndpointCreate.model_validate(
        {"url": "https://example.com/hook", "eventTypes": ["*"], "audience": "all"}
    )
    with pytest.raises(ForbiddenError, match="Only admins receive every user's events"):
        await service().create(ALICE, data)  # the URL guard and storage are never reached


async def test_a_customer_lists_their_own_owner_endpoints_an_admin_every_one() -> None:
    endpoints = OneEndpoint(_endpoint(ALICE.subject, Audience.OWNER))
    await service(endpoints).list_endpoints(ALICE, PAGE)
    await service(endpoints).list_endpoints(ADMIN, PAGE)
    mine, everyone = endpoints.pages
    assert (mine["owner_id"], mine["audience"]) == (ALICE.subject, Audience.OWNER)
    assert (everyone["owner_id"], everyone["audience"]) == (None, None)


@pytest.mark.parametrize(
    ("audience", "caller", "owner_after"),
    [
        (Audience.ALL, ADMIN, ADMIN.subject),  # the admin answers for it from now on
        (Audience.OWNER, ADMIN, "alice"),  # an owner endpoint's events stay alice's
        (Audience.OWNER, ALICE, "alice"),
    ],
)
async def test_enabling_makes_the_caller_the_owner_of_an_all_endpoint_only(
    audience: Audience, caller: Principal, owner_after: str
) -> None:
    endpoints = OneEndpoint(_endpoint("alice", audience))
    await service(endpoints).patch(caller, ENDPOINT_ID, EndpointPatch(enabled=True))
    (changes,) = endpoints.updates
    assert changes.get("owner_id", "alice") == owner_after
    assert (changes["enabled"], changes["disabled_reason"]) == (True, None)


@pytest.mark.parametrize("raw_id", [str(uuid.uuid4()), "not-a-uuid"])
async def test_an_unknown_id_is_not_found_for_anyone(raw_id: str) -> None:
    endpoints = OneEndpoint(_endpoint(ALICE.subject, Audience.OWNER))
    for caller in (ADMIN, ALICE):
        with pytest.raises(NotFoundError):
            await service(endpoints).get(caller, raw_id)
