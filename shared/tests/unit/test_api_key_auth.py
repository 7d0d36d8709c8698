"""API keys in ``authenticate``: told from access tokens by their prefix, checked for shape
before any question, resolved by the context's ``api_keys``; scopes in ``require_scope``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from sanic.compat import Header

from api_shared.auth.principal import (
    MissingScopeError,
    Principal,
    Scope,
    require_person,
    require_scope,
)
from api_shared.auth.request import authenticate
from api_shared.errors import ForbiddenError, UnauthenticatedError
from api_testkit.upstream_fakes import FakeStanding

KEY = "ak_live_" + "A" * 43
OWNER = "7c1f4c0e-0000-4000-8000-000000000001"
READER = Principal(OWNER, "customer", api_key_id="key-1", scopes=frozenset({Scope.ORDERS_READ}))


def request_with(authorization: str, **context: Any) -> Any:
    return SimpleNamespace(
        headers=Header([("authorization", authorization)]),
        ctx=SimpleNamespace(),
        app=SimpleNamespace(ctx=SimpleNamespace(context=SimpleNamespace(**context))),
    )


class CountingKeys(FakeStanding):
    def __init__(self, api_keys: dict[str, Principal]) -> None:
        super().__init__(api_keys)
        self.asked: list[str] = []

    async def resolve_api_key(self, key: str) -> Principal:
        self.asked.append(key)
        return await super().resolve_api_key(key)


async def test_a_key_is_resolved_by_the_contexts_api_keys_not_by_the_token_verifier() -> None:
    keys = CountingKeys({KEY: READER})
    request = request_with(f"Bearer {KEY}", verifier=None, api_keys=keys)

    assert await authenticate(request) == READER
    assert keys.asked == [KEY]
    assert request.ctx.principal == READER


@pytest.mark.parametrize(
    "key",
    [
        "ak_live_" + "A" * 42,  # one character short
        "ak_live_" + "A" * 44,
        "ak_test_" + "A" * 43,  # not a kind of key this platform issues
        "ak_live_" + "A" * 42 + "=",
        "ak_",
    ],
)
async def test_a_malformed_key_is_refused_without_asking_anyone(key: str) -> None:
    keys = CountingKeys({})

    with pytest.raises(UnauthenticatedError) as caught:
        await authenticate(request_with(f"Bearer {key}", verifier=None, api_keys=keys))

    assert caught.value.message == "The API key is malformed."
    assert caught.value.headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'
    assert keys.asked == []


async def test_a_service_that_takes_no_keys_refuses_them() -> None:
    with pytest.raises(UnauthenticatedError) as caught:
        await authenticate(request_with(f"Bearer {KEY}", verifier=None))

    assert caught.value.message == "API keys are not accepted here."


async def test_a_key_the_resolver_refuses_is_unauthenticated() -> None:
    with pytest.raises(UnauthenticatedError):
        await authenticate(request_with(f"Bearer {KEY}", verifier=None, api_keys=FakeStanding()))


def test_an_access_token_covers_every_scope_and_a_key_only_its_own() -> None:
    person = Principal(OWNER, "customer", session_id="session-1")

    for scope in Scope:
        assert require_scope(person, scope) is person
    assert require_scope(READER, Scope.ORDERS_READ) is READER
    with pytest.raises(MissingScopeError) as caught:
        require_scope(READER, Scope.ORDERS_WRITE)

    assert caught.value.status == 403
    assert caught.value.code == "FORBIDDEN"
    assert "orders:write" in caught.value.message
    assert caught.value.headers["WWW-Authenticate"] == (
        'Bearer error="insufficient_scope", scope="orders:write"'
    )


def test_what_needs_a_person_refuses_a_key_and_takes_a_login() -> None:
    person = Principal(OWNER, "customer", session_id="session-1")

    assert require_person(person, "Log in.") is person
    with pytest.raises(ForbiddenError) as caught:
        require_person(READER, "Log in.")
    assert caught.value.message == "Log in."
