"""What a route asks of its caller, declared once per route (``Access``), and the caller a
request has when it is admitted (``caller``).

A route names its access beside its declaration: ``READ = Access(Scope.ORDERS_READ)``, then
``principal = await caller(request, READ)`` as the handler's first line (or
``api_shared.standing.confirmed_caller`` where users-service's word on the caller counts).
"""

from __future__ import annotations

from dataclasses import dataclass

from sanic import Request

from api_shared.auth.principal import Principal, Scope, require_person, require_scope
from api_shared.auth.request import authenticate


@dataclass(frozen=True, slots=True)
class Access:
    """Who may call a route: any credential (``Access()``), an API key only with ``scope``
    (an access token covers every scope), or a person's login only (``person``: an API key
    is 403 FORBIDDEN with that message).

    ``confirm``: the caller's standing is confirmed with users-service whatever their role
    (writes, and reads that go on, such as a stream); admins are confirmed always. Only
    ``api_shared.standing.confirmed_caller`` confirms: users-service, which keeps the
    accounts, reads its callers' rows itself.
    """

    scope: Scope | None = None
    person: str | None = None
    confirm: bool = False

    def __post_init__(self) -> None:
        if self.scope is not None and self.person is not None:
            raise ValueError("an access takes an API key's scope or a person's login, not both")

    def admit(self, principal: Principal) -> Principal:
        """``principal`` when its credential may call the route; 403 FORBIDDEN otherwise."""
        if self.person is not None:
            return require_person(principal, self.person)
        if self.scope is not None:
            return require_scope(principal, self.scope)
        return principal


async def caller(request: Request, access: Access) -> Principal:
    """The request's caller as ``access`` admits it: 401 without a valid credential, 403 for
    a credential ``access`` refuses."""
    if access.confirm:
        raise ValueError("a confirmed access is api_shared.standing.confirmed_caller's")
    return access.admit(await authenticate(request))
