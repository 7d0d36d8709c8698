"""What an API key is made of: ``ak_live_`` and 43 base64url characters (256 random bits),
stored only as its SHA-256 (a lookup by hash needs no slow hashing: the key is random, not a
password), and its scopes in their stored form."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable

from api_shared.auth import API_KEY_PATTERN

KEY_PREFIX = "ak_live_"


def new_api_key() -> str:
    """A new key: ``ak_live_`` and 32 random bytes in URL-safe base64 (43 characters)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def api_key_hash(key: str) -> str:
    """What is stored of a key: the SHA-256 of the whole key, in hex."""
    return hashlib.sha256(key.encode()).hexdigest()


def join_scopes(scopes: Iterable[str]) -> str:
    """The stored form of a set of scopes (models.ApiKey): sorted, space-separated."""
    return " ".join(sorted(set(scopes)))


def split_scopes(stored: str) -> list[str]:
    """The scopes of a stored key, sorted."""
    return stored.split()


def well_formed(key: str) -> bool:
    # api_shared.auth checks it before asking; checked here too, for any other caller.
    return API_KEY_PATTERN.fullmatch(key) is not None
