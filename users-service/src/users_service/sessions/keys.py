"""Signing keys: the Ed25519 key that signs tokens and the public keys published as a JWKS.

Rotation without logging anyone out: sign with a new key, keep publishing the old public key
(``JWT_PUBLIC_KEY_FILES``) until the last token it signed has expired, then drop it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from jwt.utils import base64url_encode

from api_shared.auth import ALGORITHM
from api_shared.settings import ConfigurationError
from users_service.settings import DEV_SIGNING_KEY_FILE, Settings

logger = logging.getLogger(__name__)


class SigningKeyError(ConfigurationError):
    """The configured key files cannot be used; the service must not start."""


def public_jwk(key: Ed25519PublicKey) -> dict[str, str]:
    """The key's required JWK members (RFC 8037), in RFC 7638's lexicographic order."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return {"crv": "Ed25519", "kty": "OKP", "x": base64url_encode(raw).decode()}


def key_id(key: Ed25519PublicKey) -> str:
    """The RFC 7638 JWK thumbprint: stable for a key, the same on every replica."""
    canonical = json.dumps(public_jwk(key), separators=(",", ":"), sort_keys=True)
    return base64url_encode(hashlib.sha256(canonical.encode()).digest()).decode()


@dataclass(frozen=True, slots=True)
class SigningKeys:
    """The current private key and every public key a token may still be signed with."""

    private_key: Ed25519PrivateKey
    kid: str
    public_keys: Mapping[str, Ed25519PublicKey]

    @classmethod
    def of(
        cls, private_key: Ed25519PrivateKey, retired: tuple[Ed25519PublicKey, ...] = ()
    ) -> SigningKeys:
        current = private_key.public_key()
        public_keys = {key_id(key): key for key in (current, *retired)}
        return cls(private_key, key_id(current), public_keys)

    def jwks(self) -> dict[str, Any]:
        """The JWKS document served at ``/.well-known/jwks.json``, current key first."""
        return {
            "keys": [
                {**public_jwk(key), "kid": kid, "alg": ALGORITHM, "use": "sig"}
                for kid, key in self.public_keys.items()
            ]
        }


def load_signing_keys(settings: Settings) -> SigningKeys:
    """The keys the settings name; in development, a generated key under ./var/ by default."""
    if settings.jwt_private_key_file is not None:
        private_key = _read_private_key(settings.jwt_private_key_file)
    else:  # Settings refuses this case in production.
        private_key = _development_key(DEV_SIGNING_KEY_FILE)
    retired = tuple(_read_public_key(path) for path in settings.jwt_public_key_files)
    return SigningKeys.of(private_key, retired)


def _read_private_key(path: Path) -> Ed25519PrivateKey:
    key = _load_pem(
        path,
        lambda pem: serialization.load_pem_private_key(pem, password=None),
        "signing key",
        "an unencrypted PEM Ed25519 private key",
    )
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"the signing key {path} is not an Ed25519 key")
    return key


def _read_public_key(path: Path) -> Ed25519PublicKey:
    key = _load_pem(
        path, serialization.load_pem_public_key, "public key", "a PEM Ed25519 public key"
    )
    if not isinstance(key, Ed25519PublicKey):
        raise SigningKeyError(f"the public key {path} is not an Ed25519 key")
    return key


def _load_pem(path: Path, load: Callable[[bytes], object], name: str, form: str) -> object:
    """What ``load`` makes of the file, else SigningKeyError: the operator reads which file."""
    try:
        return load(path.read_bytes())
    except (OSError, ValueError, TypeError) as error:
        raise SigningKeyError(
            f"cannot read the {name} {path} ({form}): {type(error).__name__}"
        ) from None


def _development_key(path: Path) -> Ed25519PrivateKey:
    """Read the development key, creating it first if it does not exist yet."""
    if not path.exists():
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            # O_EXCL: a process starting at the same moment keeps the key written first.
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(descriptor, "wb") as file:
                file.write(pem)
            logger.warning("created a development signing key", extra={"path": str(path)})
    return _read_private_key(path)
