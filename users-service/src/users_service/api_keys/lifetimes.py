"""How long a new API key lives: as its maker asks, within the latest the policy allows
(``API_KEY_MAX_LIFETIME_S``, unless the owner's role is exempt) and never past the key that
makes it; else 400 VALIDATION_FAILED naming ``expiresAt``."""

from __future__ import annotations

from datetime import datetime, timedelta

from api_shared.errors import ValidationFailedError
from users_service.api_keys.schemas import ApiKeyCreate
from users_service.models import ApiKey, User
from users_service.policies import KeyPolicy


def key_expiry(
    policy: KeyPolicy, caller: User, data: ApiKeyCreate, parent: ApiKey | None, now: datetime
) -> datetime | None:
    """When the new key expires: as asked, within the latest allowed (the maximum
    lifetime, unless the policy exempts the caller; the parent key's own expiry);
    absent, that latest; null (never), only when nothing bounds it. Else 400."""
    latest = None if policy.no_expiry_for.allows(caller.role) else now + policy.max_lifetime
    bound = f"at most {_days(policy.max_lifetime)} away"
    parent_expiry = parent.expires_at if parent is not None else None
    if parent_expiry is not None and (latest is None or parent_expiry < latest):
        latest, bound = parent_expiry, "no later than the key that makes it"
    if "expires_at" not in data.model_fields_set:
        return latest
    asked = data.expires_at
    if asked is None:
        if latest is not None:
            raise _bad_expiry(f"must be set: a key expires, {bound}")
        return None
    if asked <= now:
        raise _bad_expiry("must be in the future")
    if latest is not None and asked > latest:
        raise _bad_expiry(f"must be {bound} ({latest.isoformat()})")
    return asked


def _bad_expiry(reason: str) -> ValidationFailedError:
    return ValidationFailedError(f"expiresAt {reason}", fields={"expiresAt": reason})


def _days(lifetime: timedelta) -> str:
    days = lifetime.total_seconds() / 86400
    return "1 day" if days == 1 else f"{days:g} days"
