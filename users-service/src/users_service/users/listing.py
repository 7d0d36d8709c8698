"""The list of users (an admin's, docs/api.md#users): its sorts, its filters, one page."""

from __future__ import annotations

from collections.abc import Sequence

from api_shared.auth import Role
from api_shared.paging import PageRequest, choice
from users_service.users.ports import UserRow, UserStore

# Wire sort names and the model fields they order by.
SORT_FIELDS = {"createdAt": "created_at", "name": "name"}
SORTS = tuple(SORT_FIELDS)
DEFAULT_SORT = "createdAt"
FILTERS = {"role": choice(*(role.value for role in Role)), "isActive": choice("true", "false")}


async def users_page(users: UserStore, page: PageRequest) -> tuple[Sequence[UserRow], int]:
    """One page of users and how many match its filters."""
    role, is_active = page.filters.get("role"), page.filters.get("isActive")
    return await users.page(
        role=Role(role) if role else None,
        is_active=None if is_active is None else is_active == "true",
        order_by=page.sort.ordering(SORT_FIELDS),
        limit=page.limit,
        offset=page.offset,
    )
