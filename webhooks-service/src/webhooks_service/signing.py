"""Standard Webhooks signing: the secret's format and the three headers of a delivery.

A secret is ``whsec_`` + the base64 of 32 random bytes; the signature is ``v1,`` + the base64
of HMAC-SHA256, keyed with the secret's decoded bytes, of ``{id}.{timestamp}.{body}``
(https://www.standardwebhooks.com/, "Signature scheme"). While a rotated-out secret is in
its grace period, a delivery is signed with both: ``webhook-signature`` holds the
space-separated signatures, the new secret's first, and a receiver accepts the delivery if
any one of them verifies with the secret it has ("Signature scheme" allows several).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Sequence

PREFIX = "whsec_"
SECRET_BYTES = 32


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def secret_key(secret: str) -> bytes:
    """The bytes a ``whsec_…`` secret stands for (the HMAC key)."""
    return base64.b64decode(secret.removeprefix(PREFIX), validate=True)


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value of one delivery attempt."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed_headers(
    signing_secrets: Sequence[str], message_id: str, timestamp: int, body: bytes
) -> dict[str, str]:
    """The headers of a delivery: ``webhook-id``, ``webhook-timestamp``, ``webhook-signature``
    (one signature per secret, in the order given)."""
    if not signing_secrets:
        raise ValueError("a delivery is signed with at least one secret")
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(
            signature(secret, message_id, timestamp, body) for secret in signing_secrets
        ),
    }
