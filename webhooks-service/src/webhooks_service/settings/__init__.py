"""webhooks-service settings, from the environment (the API and the dispatcher read the same);
unsafe production configuration is refused.

The families of settings are in the modules beside this one; ``Settings`` composes them with
the shared ones and makes the checks across fields.
"""

from __future__ import annotations

from pydantic import field_validator, model_validator

from api_shared.events.settings import EventSettings
from api_shared.settings import ServiceSettings, TokenSettings
from api_shared.standing import StandingSettings
from webhooks_service.addresses import names_a_private_host
from webhooks_service.backoff import MAX_SPAN_S
from webhooks_service.settings.delivery import (
    DAY_S,
    DEV_SECRETS_KEY_FILE,
    MAX_GRACE_S,
    DeliverySettings,
)
from webhooks_service.settings.processes import DatabaseSettings, UpstreamSettings
from webhooks_service.settings.streams import EventLogSettings, EventStreamSettings

__all__ = ["DAY_S", "DEV_SECRETS_KEY_FILE", "MAX_GRACE_S", "Settings"]


# webhooks-service's own families come first: their fields override ServiceSettings'
# (``port``).
class Settings(
    DatabaseSettings,
    UpstreamSettings,
    EventLogSettings,
    EventStreamSettings,
    DeliverySettings,
    ServiceSettings,
    TokenSettings,
    EventSettings,
    StandingSettings,
):
    """The API's and the dispatcher's settings (they read the same); the checks across
    fields (streams' caps, production's refusals) are made here."""

    @field_validator("retry_delays_s")
    @classmethod
    def _within_a_day(cls, delays: tuple[float, ...]) -> tuple[float, ...]:
        if any(delay <= 0 for delay in delays):
            raise ValueError("every delay must be above 0")
        if sum(delays) > MAX_SPAN_S:
            raise ValueError(f"the delays must add up to at most {MAX_SPAN_S:g} s (24 h)")
        return delays

    @model_validator(mode="after")
    def _one_address_never_fills_the_process(self) -> Settings:
        if self.stream_max_per_address >= self.stream_max:
            raise ValueError(
                f"EVENTS_STREAM_MAX_PER_ADDRESS ({self.stream_max_per_address}) must be below "
                f"EVENTS_STREAM_MAX ({self.stream_max}): one client address must not take "
                "every stream of a replica"
            )
        return self

    @model_validator(mode="after")
    def _refuse_unsafe_configuration(self) -> Settings:
        if not self.is_production:
            return self
        if self.allow_private:
            raise ValueError(
                "WEBHOOK_ALLOW_PRIVATE=1 lets endpoints reach loopback and private addresses: "
                "it is for development and tests, and refused when APP_ENV=production"
            )
        private = [host for host in self.allowed_hosts if names_a_private_host(host)]
        if private:
            raise ValueError(
                f"WEBHOOK_ALLOWED_HOSTS names hosts that are not public ({', '.join(private)}): "
                "refused when APP_ENV=production"
            )
        if self.secrets_key_file is None:
            raise ValueError(
                "WEBHOOK_SECRETS_KEY_FILE must name the key file endpoint secrets are sealed "
                "with when APP_ENV=production; the development key is never used in production"
            )
        return self
