"""Who calls: a user id with a real bearer token, and the headers that carry it."""

from __future__ import annotations

from dataclasses import dataclass


def bearer(token: str) -> dict[str, str]:
    """The ``Authorization`` header of a bearer ``token``."""
    return {"Authorization": f"Bearer {token}"}


@dataclass(frozen=True, slots=True)
class Caller:
    """A user id with a real token for it, and the headers that carry the token."""

    id: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return bearer(self.token)
