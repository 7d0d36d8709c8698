"""The state table, checked against docs/api.md#states for every (from, to, role) combination.

The expectations are written out here independently of ``orders_service.states``, so a
change to the table that breaks the contract fails a test.
"""

from __future__ import annotations

import itertools

import pytest

from api_shared.auth.principal import Principal, Role
from orders_service.models import OrderStatus
from orders_service.states import may_delete, may_edit, may_transition, role_of

P, C, S, D, X = "pending", "confirmed", "shipped", "delivered", "cancelled"
CUSTOMER, ADMIN = "customer", "admin"

ALLOWED_TRANSITIONS = {
    (P, C, ADMIN),
    (C, S, ADMIN),
    (S, D, ADMIN),
    (P, X, ADMIN),
    (C, X, ADMIN),
    (P, X, CUSTOMER),
    (C, X, CUSTOMER),
}
ALLOWED_EDITS = {(P, CUSTOMER), (P, ADMIN), (C, ADMIN)}
ALLOWED_DELETES = {(P, CUSTOMER), (X, CUSTOMER)} | {(status, ADMIN) for status in (P, C, S, D, X)}

EVERY_TRANSITION = list(itertools.product(OrderStatus, OrderStatus, Role))


@pytest.mark.parametrize(("current", "target", "role"), EVERY_TRANSITION)
def test_a_transition_is_allowed_exactly_when_the_contract_allows_it_for_that_role(
    current: OrderStatus, target: OrderStatus, role: Role
) -> None:
    expected = (current.value, target.value, role.value) in ALLOWED_TRANSITIONS

    assert may_transition(role, current, target) is expected


def test_the_matrix_covers_five_statuses_twice_over_for_two_roles() -> None:
    assert len(EVERY_TRANSITION) == 50


@pytest.mark.parametrize(("current", "role"), list(itertools.product(OrderStatus, Role)))
def test_items_and_note_are_editable_only_in_the_contracts_statuses(
    current: OrderStatus, role: Role
) -> None:
    assert may_edit(role, current) is ((current.value, role.value) in ALLOWED_EDITS)


@pytest.mark.parametrize(("current", "role"), list(itertools.product(OrderStatus, Role)))
def test_deletion_is_allowed_only_in_the_documented_statuses(
    current: OrderStatus, role: Role
) -> None:
    assert may_delete(role, current) is ((current.value, role.value) in ALLOWED_DELETES)


@pytest.mark.parametrize("terminal", [OrderStatus.DELIVERED, OrderStatus.CANCELLED])
def test_delivered_and_cancelled_orders_go_nowhere(terminal: OrderStatus) -> None:
    assert not any(
        may_transition(role, terminal, target) for target in OrderStatus for role in Role
    )


def test_only_the_admin_role_has_admin_rights() -> None:
    assert role_of(Principal("u", "admin")) is Role.ADMIN
    assert role_of(Principal("u", "customer")) is Role.CUSTOMER
    assert role_of(Principal("u", "superuser")) is Role.CUSTOMER
