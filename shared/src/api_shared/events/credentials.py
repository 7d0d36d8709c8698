"""NKeys: how a process proves to NATS who it is, and what the server knows of it.

Each process that connects to NATS holds an NKey *seed* (an Ed25519 private key, ``S...``),
in a file of its own (``NATS_NKEY_SEED_FILE``: a compose or Kubernetes secret). The server
knows only the matching *public* key (``U...``): its config holds no secret, and it
authenticates a client by the signature of a nonce it sends at each connection. Chosen over
user names and passwords, which the server's config (or its environment) would have to hold.

``make run`` and the test kit make the seeds themselves (``ensure_seeds``); deployments make
them with ``deploy/init-secrets.sh``. A seed is never logged: errors name its file only.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import nkeys

SEED_SUFFIX = ".nk"


class CredentialsError(Exception):
    """A seed file is missing, unreadable or not an NKey user seed (the message names it)."""


@dataclass(frozen=True, slots=True)
class NatsLogin:
    """Where a process finds NATS, and as whom it connects there (the seed in its file)."""

    url: str
    user: str  # its NATS user: its connection's name and its inbox (``access.inbox_of``)
    seed_file: Path


def new_seed() -> bytes:
    """A fresh NKey user seed (``SU...``), as ``nk -gen user`` makes one."""
    seed: bytes = nkeys.encode_seed(secrets.token_bytes(32), nkeys.PREFIX_BYTE_USER)
    return seed


def public_key(seed: bytes) -> str:
    """The public key (``U...``) of a user seed; ``CredentialsError`` if it is none."""
    try:
        pair = nkeys.from_seed(bytearray(seed.strip()))
        key = bytes(pair.public_key).decode()
    except (nkeys.NkeysError, ValueError, TypeError):
        raise CredentialsError("not an NKey seed") from None
    if not key.startswith("U"):
        raise CredentialsError("not the seed of an NKey user")
    return key


def read_seed(path: Path) -> str:
    """The user seed in ``path``; ``CredentialsError`` naming the file (never its content)."""
    try:
        seed = path.read_bytes().strip()
    except OSError as error:
        raise CredentialsError(f"cannot read the NKey seed {path}: {error.strerror}") from None
    try:
        public_key(seed)
    except CredentialsError as error:
        raise CredentialsError(f"{path}: {error}") from None
    return seed.decode()


def seed_file(folder: Path, user: str) -> Path:
    """Where ``make run`` and the test kit keep ``user``'s seed: ``<folder>/<user>.nk``."""
    return folder / f"{user}{SEED_SUFFIX}"


def ensure_seeds(folder: Path, users: list[str]) -> dict[str, str]:
    """Each user's public key, its seed written to ``folder`` first if it has none yet
    (readable by this OS user only); seeds already there are kept."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    keys: dict[str, str] = {}
    for user in users:
        path = seed_file(folder, user)
        if not path.exists():
            # Written whole under another name, then linked into place: a reader finds the
            # whole seed or none, and a seed another process wrote meanwhile is kept.
            draft = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
            draft.write_bytes(new_seed() + b"\n")
            draft.chmod(0o600)
            try:
                os.link(draft, path)
            except FileExistsError:
                pass
            finally:
                draft.unlink()
        keys[user] = public_key(read_seed(path).encode())
    return keys
