"""Who may do what to an order in which status: the one table of the rules of docs/api.md#states.

    pending ──► confirmed ──► shipped ──► delivered
       │            │
       └──► cancelled ◄┘

A customer may only cancel, and may change items/note (or delete) only while the order is
pending (deleting a cancelled order is also allowed: it only discards history of a dead order).
An admin may make every transition drawn above, edit items/note until the order ships, and
delete in any status. Everything else is 409 INVALID_STATE. "Staying" in the same status is
not a transition: a request that leaves the status as it is passes this table untouched.
"""

from __future__ import annotations

from collections.abc import Mapping

# Role is re-exported: the table's callers name roles as states.Role.
from api_shared.auth.principal import Principal
from api_shared.auth.principal import Role as Role
from api_shared.errors import InvalidStateError
from orders_service.models import OrderStatus
from orders_service.ports import OrderValues


def role_of(principal: Principal) -> Role:
    """Any role other than admin has a customer's rights."""
    return Role.ADMIN if principal.is_admin else Role.CUSTOMER


_P, _C, _S, _D, _X = (
    OrderStatus.PENDING,
    OrderStatus.CONFIRMED,
    OrderStatus.SHIPPED,
    OrderStatus.DELIVERED,
    OrderStatus.CANCELLED,
)
_ANYONE = frozenset(Role)
_ADMIN = frozenset({Role.ADMIN})

TRANSITIONS: Mapping[tuple[OrderStatus, OrderStatus], frozenset[Role]] = {
    (_P, _C): _ADMIN,
    (_C, _S): _ADMIN,
    (_S, _D): _ADMIN,
    (_P, _X): _ANYONE,
    (_C, _X): _ANYONE,
}
"""(from, to) → the roles that may move an order along that edge; absent edges: nobody."""

EDITABLE: Mapping[Role, frozenset[OrderStatus]] = {
    Role.CUSTOMER: frozenset({_P}),
    Role.ADMIN: frozenset({_P, _C}),
}
"""Role → the statuses in which it may change an order's items or note."""

DELETABLE: Mapping[Role, frozenset[OrderStatus]] = {
    Role.CUSTOMER: frozenset({_P, _X}),
    Role.ADMIN: frozenset(OrderStatus),
}
"""Role → the statuses in which it may delete an order."""


def may_transition(role: Role, current: OrderStatus, target: OrderStatus) -> bool:
    return role in TRANSITIONS.get((current, target), frozenset())


def may_edit(role: Role, current: OrderStatus) -> bool:
    return current in EDITABLE[role]


def may_delete(role: Role, current: OrderStatus) -> bool:
    return current in DELETABLE[role]


def goes_with_user(current: OrderStatus) -> bool:
    """Whether a deleted user's order is deleted with them: one they could have deleted."""
    return may_delete(Role.CUSTOMER, current)


def check_change(role: Role, current: OrderValues, wanted: OrderValues) -> None:
    """409 INVALID_STATE unless ``role`` may change the order from ``current`` to ``wanted``
    (its items or note, its status) by the tables above."""
    edits = wanted.items != current.items or wanted.note != current.note
    if edits and not may_edit(role, current.status):
        raise InvalidStateError(f"Items and note cannot be changed on a {current.status} order.")
    if wanted.status != current.status and not may_transition(role, current.status, wanted.status):
        raise InvalidStateError(
            f"Status cannot change from {current.status} to {wanted.status}"
            + (" by a customer." if role is Role.CUSTOMER else ".")
        )
