"""The API keys' part of the service's wiring: the rules on their store (which account mail
reads too), resolving the key a request sends."""

from __future__ import annotations

from users_service.api_keys.ports import ApiKeyStore, PasswordConfirmation
from users_service.api_keys.services import ApiKeyService
from users_service.settings import Settings


def wire_api_keys(
    settings: Settings, store: ApiKeyStore, passwords: PasswordConfirmation
) -> ApiKeyService:
    return ApiKeyService(store, passwords, policy=settings.key_policy)
