"""API keys: making, listing and revoking them (``/api/api-keys``), and resolving the key a
request sends (``api_shared.auth.authenticate`` asks)."""

from users_service.api_keys.ports import ApiKeyStore, PasswordConfirmation
from users_service.api_keys.repository import ApiKeyRepository
from users_service.api_keys.routes import api_keys
from users_service.api_keys.services import MAX_KEYS_PER_USER, ApiKeyService
from users_service.api_keys.wiring import wire_api_keys

__all__ = [
    "MAX_KEYS_PER_USER",
    "ApiKeyRepository",
    "ApiKeyService",
    "ApiKeyStore",
    "PasswordConfirmation",
    "api_keys",
    "wire_api_keys",
]
