"""users-service's own rate limits: the budgets only it can charge (docs/api.md#limits).

Only users-service knows which account a login names (whatever its spelling), whose current
password a request is guessing, which session a refresh token is really of, and which
requests cost a password hash. The gateway charges what routes and addresses tell; these
are charged here, before any hashing, in the same kind of buckets (``api_shared.ratelimit``:
in Redis when ``REDIS_URL`` is set, shared by every replica; else this process's memory).
A refusal is 429 RATE_LIMITED with ``Retry-After`` and the policy's limit headers, which the
gateway passes on.

Keys name accounts by user id, or by a digest of the normalised email when no account has
it, and addresses by digest in pairs: no bucket key holds an email or an address.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from uuid import UUID

from prometheus_client.registry import Collector

from api_shared.context import Inert
from api_shared.errors import InvalidCredentialsError
from api_shared.metrics import Reading, Readings
from api_shared.ratelimit import IPV6_SITE_PREFIX, Limiter, Policy, address_key, per_minute

Charge = tuple[Policy, str]


@dataclass(frozen=True, slots=True)
class Budgets:
    """The policies, as the settings describe them."""

    login_account: Policy  # failed logins per (account, client address)
    login_account_ceiling: Policy  # failed logins per account, from every address together
    refresh_session: Policy  # refreshes per session, with tokens of that session only
    credential_change: Policy  # password work of changes and deletions per client address
    current_password: Policy  # wrong current passwords per account

    @classmethod
    def of(
        cls,
        *,
        login_account_per_minute: int,
        login_account_ceiling_per_minute: int,
        refresh_session_per_minute: int,
        credential_change_per_minute: int,
        current_password_failures: int,
        current_password_window_s: float,
    ) -> Budgets:
        return cls(
            login_account=per_minute("login-account", login_account_per_minute),
            login_account_ceiling=per_minute(
                "login-account-ceiling", login_account_ceiling_per_minute
            ),
            refresh_session=per_minute("refresh-session", refresh_session_per_minute),
            credential_change=per_minute("credential-change", credential_change_per_minute),
            current_password=Policy(
                "current-password",
                current_password_failures / current_password_window_s,
                current_password_failures,
            ),
        )


class Throttle(Inert):
    """Charges the budgets; the rules say when (``services``, ``sessions``). A resource of
    the context for its metrics alone (``throttle_readings``)."""

    def __init__(self, limiter: Limiter, budgets: Budgets) -> None:
        self.limiter = limiter
        self.budgets = budgets
        self.refused = 0  # requests refused here (a metric)
        self.store_errors = 0  # Redis failures, each met with this process's own buckets
        limiter.on_refused = self._count_refusal

    @contextlib.asynccontextmanager
    async def guessing(self, charges: list[Charge]) -> AsyncIterator[None]:
        """Charge ``charges`` for a password check, keeping them only if it fails.

        Taken before the check (429 without hashing when one is empty); given back when the
        block ends without InvalidCredentialsError: a right password, and an answer that
        is no guess at all (no hashing slot free, say), cost nothing.
        """
        await self.limiter.take_all(charges)
        try:
            yield
        except InvalidCredentialsError:
            raise
        except BaseException:
            await self.limiter.give_back(charges)
            raise
        await self.limiter.give_back(charges)

    def failed_login(self, account: str, address: str | None) -> list[Charge]:
        """A login's charges: per (account, address) and per account (``account_key``)."""
        pair = _digest(f"{account}\n{address_key(address or '', IPV6_SITE_PREFIX)}")
        return [
            (self.budgets.login_account, f"login:account-address:{pair}"),
            (self.budgets.login_account_ceiling, f"login:account:{account}"),
        ]

    def current_password(self, user_id: UUID) -> list[Charge]:
        """A check of ``user_id``'s current password: its account's budget of wrong ones."""
        return [(self.budgets.current_password, f"current-password:{user_id}")]

    async def credential_work(self, address: str | None) -> None:
        """One request's password work (a hash, a current-password check) from ``address``;
        never given back: the work is done whatever its outcome."""
        key = f"credential-change:ip:{address_key(address or '', IPV6_SITE_PREFIX)}"
        await self.limiter.take(self.budgets.credential_change, key)

    async def refresh(self, session_id: UUID) -> None:
        """A refresh of ``session_id`` with one of its own tokens."""
        await self.limiter.take(self.budgets.refresh_session, f"refresh:session:{session_id.hex}")

    def collectors(self) -> Sequence[Collector]:
        return (Readings(throttle_readings(self)),)

    def _count_refusal(self, policy: str) -> None:
        self.refused += 1

    def count_store_error(self) -> None:
        self.store_errors += 1


def account_key(user_id: UUID | None, normalized_email: str) -> str:
    """The account a login names: its user id, else (no such account) its email's digest, so
    that an unknown email is charged exactly like a known one."""
    return f"user:{user_id}" if user_id is not None else f"email:{_digest(normalized_email)}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def throttle_readings(throttle: Throttle) -> list[Reading]:
    return [
        Reading(
            "rate_limited",
            "Requests refused 429 by users-service's own budgets (accounts, sessions, "
            "password work).",
            lambda: throttle.refused,
            kind="counter",
        ),
        Reading(
            "rate_limiter_errors",
            "Rate-limit store (Redis) failures; the limits held with this process's buckets.",
            lambda: throttle.store_errors,
            kind="counter",
        ),
    ]
