"""A route's declared access (api_shared.auth.Access), the trust in users-service a service
wires once (api_shared.trust), and the small validators and orderings services share."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from api_shared.auth import Access, MissingScopeError, Principal, Role, Scope
from api_shared.errors import ForbiddenError
from api_shared.http import HttpSession
from api_shared.paging import page_order
from api_shared.settings import TokenSettings
from api_shared.standing import CallerCheck, StandingSettings
from api_shared.trust import trust_users_service
from api_shared.validation import not_null

PERSON = Principal(subject="u1", role=Role.CUSTOMER)
KEY = Principal(subject="u1", role=Role.CUSTOMER, api_key_id="k1", scopes=frozenset({"a:b"}))


class Settings(TokenSettings, StandingSettings):
    """What a service that trusts users-service reads of its settings."""


def test_an_access_admits_a_key_with_its_scope_and_any_person() -> None:
    access = Access(Scope.ORDERS_READ)

    assert access.admit(PERSON) is PERSON
    with pytest.raises(MissingScopeError):
        access.admit(KEY)
    assert Access().admit(KEY) is KEY


def test_a_persons_access_refuses_every_key_with_its_message() -> None:
    access = Access(person="People only.")

    assert access.admit(PERSON) is PERSON
    with pytest.raises(ForbiddenError, match="People only"):
        access.admit(KEY)


def test_an_access_takes_a_scope_or_a_person_not_both() -> None:
    with pytest.raises(ValueError, match="not both"):
        Access(Scope.ORDERS_READ, person="People only.")


def test_trust_builds_what_it_is_not_given_through_the_one_session() -> None:
    http = HttpSession(timeout_s=1)

    trust = trust_users_service(Settings(), http)

    assert isinstance(trust.standing, CallerCheck)
    assert trust.standing.users is trust.replicas
    assert trust.replicas.http is http
    assert trust.resources[0] is http  # first: the JWKS refresh calls through it
    assert [getattr(part, "name", None) for part in trust.resources[1:]] == ["jwks_refresh"]


def test_trust_starts_the_session_only_when_something_calls_through_it() -> None:
    http = HttpSession(timeout_s=1)
    built = trust_users_service(Settings(), http)
    verifier, standing = built.verifier, built.standing

    given = trust_users_service(Settings(), http, verifier=verifier, standing=standing)
    assert given.resources == ()
    assert (given.verifier, given.standing) == (verifier, standing)
    used = trust_users_service(
        Settings(), http, verifier=verifier, standing=standing, http_used=True
    )
    assert used.resources == (http,)


def test_page_order_breaks_ties_by_id_in_the_same_direction() -> None:
    assert page_order("created_at") == ("created_at", "id")
    assert page_order("created_at", descending=True) == ("-created_at", "-id")
    assert page_order("-name") == ("-name", "-id")
    assert page_order("time", descending=True, tie="seq") == ("-time", "-seq")


class Patch(BaseModel):
    items: list[int] | None = None
    note: str | None = None

    _null = not_null("items")


def test_not_null_refuses_null_sent_and_keeps_an_absent_field() -> None:
    assert Patch().items is None
    assert Patch(note=None).note is None
    with pytest.raises(ValidationError, match="cannot be null"):
        Patch(items=None)
