"""The policies the settings describe and the rules follow: how account tokens and their mail
are bounded (``account_mail``), and how API keys may be minted and live (``api_keys``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum

from api_shared.auth import Role


@dataclass(frozen=True, slots=True)
class RecoveryPolicy:
    """How long tokens live and how many messages an hour may bring (the settings)."""

    verification_ttl: timedelta
    reset_ttl: timedelta
    verification_mails_per_hour: int  # per account
    reset_mails_per_hour: int  # per address, and per account


class NoExpiryFor(StrEnum):
    """Who may make an API key that never expires, or lives past the maximum lifetime
    (``API_KEY_NO_EXPIRY_FOR``): nobody (the default), admins, or every user."""

    NOBODY = "nobody"
    ADMINS = "admins"
    EVERYONE = "everyone"

    def allows(self, role: Role) -> bool:
        return self is NoExpiryFor.EVERYONE or (self is NoExpiryFor.ADMINS and role is Role.ADMIN)


@dataclass(frozen=True, slots=True)
class KeyPolicy:
    """What minting an API key needs, and how long a key may live (the settings)."""

    recent_authentication: timedelta  # a login or password confirmation within this
    max_lifetime: timedelta
    no_expiry_for: NoExpiryFor
