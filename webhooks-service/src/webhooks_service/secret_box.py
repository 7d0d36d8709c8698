"""Endpoint secrets sealed at rest: Fernet (AES-128-CBC and HMAC-SHA256) under keys from a file.

The secrets must be readable to sign with, so they cannot be hashed; sealed, a copy of the
database (a backup, a replica, a leaked dump) is no longer a copy of every receiver's key.
The key file (``WEBHOOK_SECRETS_KEY_FILE``) holds Fernet keys, one per line (``#`` comments
and blank lines aside): the first seals, every one opens (``MultiFernet``). Rotating the key:
put a new key on the first line and keep the old ones below it, restart the API and the
dispatchers (a dispatcher's maintenance, at its start then hourly, seals every secret again
with the first key: ``EndpointRepository.reseal``), then drop the old lines. In development
a key is created under ``var/`` when the file is not set.

A value that is not sealed (``whsec_…``) is opened as it is: endpoints stored before secrets
were sealed, or by an older replica during a rolling upgrade, until that maintenance seals
them.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from api_shared.settings import ConfigurationError
from webhooks_service.models import Endpoint
from webhooks_service.settings import DEV_SECRETS_KEY_FILE, Settings
from webhooks_service.signing import PREFIX

logger = logging.getLogger(__name__)


class SecretKeyError(ConfigurationError):
    """The key file cannot be used; the service must not start."""


class SealedSecretError(ValueError):
    """A sealed secret that none of the keys opens (a key dropped too soon, say)."""


class SecretBox:
    """Seals endpoint secrets with the first key and opens them with any."""

    def __init__(self, keys: Sequence[bytes]) -> None:
        if not keys:
            raise ValueError("a SecretBox needs at least one key")
        self._current = Fernet(keys[0])
        self._fernet = MultiFernet([self._current, *(Fernet(key) for key in keys[1:])])

    def seal(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode()

    def open(self, stored: str) -> str:
        """The secret a stored value stands for; SealedSecretError when no key opens it."""
        if is_plaintext(stored):
            return stored
        try:
            return self._fernet.decrypt(stored.encode()).decode()
        except InvalidToken:
            raise SealedSecretError("no key of WEBHOOK_SECRETS_KEY_FILE opens it") from None

    def reseal(self, stored: str) -> str | None:
        """``stored`` sealed with the first key, or None when it already is."""
        if not is_plaintext(stored):
            try:
                self._current.decrypt(stored.encode())
                return None
            except InvalidToken:
                pass
        return self.seal(self.open(stored))


def signing_secrets(endpoint: Endpoint, box: SecretBox, now: datetime) -> list[str]:
    """The secrets a delivery to ``endpoint`` is signed with at ``now``: its secret, and the
    one its last rotation replaced while that one's grace period lasts."""
    found = [box.open(endpoint.secret)]
    until = endpoint.previous_secret_until
    if endpoint.previous_secret is not None and until is not None and now < until:
        found.append(box.open(endpoint.previous_secret))
    return found


def is_plaintext(stored: str) -> bool:
    """Whether a stored secret is a ``whsec_…`` secret as it is (never sealed)."""
    return stored.startswith(PREFIX)


def new_key() -> bytes:
    return Fernet.generate_key()


def load_secret_box(settings: Settings) -> SecretBox:
    """The keys ``WEBHOOK_SECRETS_KEY_FILE`` names; in development, a key under ./var/ by
    default (created when missing). Settings refuses the default in production."""
    path = settings.secrets_key_file or _development_key_file(DEV_SECRETS_KEY_FILE)
    return SecretBox(read_keys(path))


def read_keys(path: Path) -> list[bytes]:
    """The Fernet keys of a key file, first (sealing) key first; SecretKeyError otherwise."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise SecretKeyError(
            f"cannot read the webhook secrets key file {path}: {type(error).__name__}"
        ) from None
    keys: list[bytes] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            Fernet(line)
        except ValueError:
            raise SecretKeyError(
                f"line {number} of {path} is not a Fernet key (32 bytes, url-safe base64)"
            ) from None
        keys.append(line.encode())
    if not keys:
        raise SecretKeyError(f"the webhook secrets key file {path} holds no key")
    return keys


def _development_key_file(path: Path) -> Path:
    """The development key file, created first (complete, or not at all) if it is missing."""
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written aside, then linked into place: the API and the dispatcher start together, and
    # neither may read a half-written file; a link to an existing name fails, keeping the
    # first one.
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".webhook-secrets-")
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(new_key() + b"\n")
        os.link(temporary, path)
        logger.warning("created a development webhook secrets key", extra={"path": str(path)})
    except FileExistsError:
        pass
    finally:
        os.unlink(temporary)
    return path
