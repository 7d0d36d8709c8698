"""Who calls and from where, for every blueprint's handlers: the token's principal with the
caller's current row (``SessionService.resolve_caller``, the caller check), and the client."""

from __future__ import annotations

from typing import Protocol

from sanic import Request

from api_shared.auth import Access, Principal, caller
from api_shared.client_address import client_address
from users_service.models import ADDRESS_MAX_LENGTH, USER_AGENT_MAX_LENGTH, User
from users_service.sessions.ports import Client


class CallerCheck(Protocol):
    async def resolve_caller(self, principal: Principal) -> User: ...


class _Context(Protocol):
    """What these helpers read of the service's context."""

    @property
    def sessions(self) -> CallerCheck: ...


def _check(request: Request) -> CallerCheck:
    context: _Context = request.app.ctx.context
    return context.sessions


async def caller_of(request: Request, access: Access) -> tuple[Principal, User]:
    """The caller ``access`` admits (api_shared.auth.caller) and their current row, for the
    routes that act on the caller themselves."""
    principal = await caller(request, access)
    return principal, await _check(request).resolve_caller(principal)


def client_of(request: Request) -> Client:
    """The request's user agent and client address: shown in the sessions list, and what
    the budgets of users_service.budgets charge per address.

    The address is the one the gateway resolved (X-Real-IP: the client, behind any trusted
    proxies), else the connection's peer (api_shared.client_address).
    """
    agent = request.headers.get("user-agent")
    address = client_address(request)[:ADDRESS_MAX_LENGTH] or None
    agent = agent[:USER_AGENT_MAX_LENGTH].replace("\x00", "") if agent else None
    return Client(user_agent=agent or None, address=address)
