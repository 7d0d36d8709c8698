"""The environment the platform's processes start with, in development mode, on this machine.

One place for what every harness gives them: the interpreter running the tests, a signing
key provisioned as an operator would, an admin, every gateway limit lifted (the harnesses
call from one address, as fast as they can; the limits are tested on their own), and where
each service and database is.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

LIFTED = "1000000"
LIFTED_LIMITS = {
    name: LIFTED
    for name in (
        "RATE_LIMIT_RPS",
        "RATE_LIMIT_BURST",
        "API_KEY_RATE_LIMIT_RPS",
        "API_KEY_RATE_LIMIT_BURST",
        "ADDRESS_RATE_LIMIT_RPS",
        "ADDRESS_RATE_LIMIT_BURST",
        "LOGIN_RATE_LIMIT_PER_MINUTE",
        "LOGIN_ACCOUNT_RATE_LIMIT_PER_MINUTE",
        "LOGIN_ACCOUNT_CEILING_PER_MINUTE",
        "SIGNUP_RATE_LIMIT_PER_MINUTE",
        "REFRESH_RATE_LIMIT_PER_MINUTE",
        "REFRESH_SESSION_RATE_LIMIT_PER_MINUTE",
        "CREDENTIAL_CHANGE_RATE_LIMIT_PER_MINUTE",
        "CURRENT_PASSWORD_FAILURE_LIMIT",
        "RESET_REQUEST_RATE_LIMIT_PER_MINUTE",
        "ACCOUNT_TOKEN_RATE_LIMIT_PER_MINUTE",
        "VERIFICATION_MAILS_PER_HOUR",
        "PASSWORD_RESET_MAILS_PER_HOUR",
    )
}
"""Every rate limit of the gateway and users-service, lifted."""
LIFTED_LIMITS["EVENTS_STREAM_MAX_PER_ADDRESS"] = "999"
"""Event streams per client address, as many as webhooks-service allows (below
``EVENTS_STREAM_MAX``, 1000): the harness opens every stream from one address."""

HARNESS_PREFIXES = ("PYTEST_", "COV_", "BENCH_", "SOAK_")
"""Variables of the harness itself, which the servers must not inherit."""


def write_signing_key(path: Path) -> Path:
    """A fresh Ed25519 private key in ``path``, as ``openssl genpkey`` would provision it."""
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path.write_bytes(pem)
    path.chmod(0o600)
    return path


def development_environment(
    key_file: Path, admin_email: str, admin_password: str, **extra: str
) -> dict[str, str]:
    """This process's environment for a server: development mode, the key, the admin, no
    limits, ``extra`` on top. The interpreter running this comes first on PATH (the Procfile
    says plain ``python``)."""
    env = {
        name: value for name, value in os.environ.items() if not name.startswith(HARNESS_PREFIXES)
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(
        {
            "APP_ENV": "development",
            "PYTHONUNBUFFERED": "1",
            "JWT_PRIVATE_KEY_FILE": str(key_file),
            "ADMIN_EMAIL": admin_email,
            "ADMIN_PASSWORD": admin_password,
            **LIFTED_LIMITS,
            **extra,
        }
    )
    return env


def own_address(service: str, port: int, database: str) -> dict[str, str]:
    """Where one service (users, orders, books) listens and finds its database."""
    prefix = service.upper()
    return {f"{prefix}_PORT": str(port), f"{prefix}_DATABASE_URL": database}


def addresses(ports: Mapping[str, int], databases: Mapping[str, str]) -> dict[str, str]:
    """Where each service listens, finds its database and finds the others.

    ``ports`` by name (gateway, gateway-admin, users, orders, books), ``databases`` by
    service (users, orders, books).
    """
    url = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
    return {
        "GATEWAY_PORT": str(ports["gateway"]),
        "GATEWAY_ADMIN_PORT": str(ports["gateway-admin"]),
        **own_address("users", ports["users"], databases["users"]),
        **own_address("orders", ports["orders"], databases["orders"]),
        **own_address("books", ports["books"], databases["books"]),
        "USERS_SERVICE_URL": url["users"],
        "ORDERS_SERVICE_URL": url["orders"],
        "BOOKS_SERVICE_URL": url["books"],
        "BOOKS_GRAPHQL_URL": f"{url['books']}/graphql",
        "JWKS_URL": f"{url['users']}/.well-known/jwks.json",
    }


def webhooks_addresses(ports: Mapping[str, int], databases: Mapping[str, str]) -> dict[str, str]:
    """Where webhooks-service and its dispatcher listen and find their database.

    ``ports``: webhooks and dispatcher (NATS is the stack's own, as for every service).
    Receivers of the tests listen on loopback, which WEBHOOK_ALLOW_PRIVATE allows, and on
    nothing else: WEBHOOK_ALLOWED_HOSTS keeps every delivery there (a fuzzer registers
    endpoints of its own making).
    """
    return {
        "WEBHOOKS_PORT": str(ports["webhooks"]),
        "WEBHOOKS_DISPATCHER_PORT": str(ports["dispatcher"]),
        "WEBHOOKS_DATABASE_URL": databases["webhooks"],
        "WEBHOOKS_SERVICE_URL": f"http://127.0.0.1:{ports['webhooks']}",
        "WEBHOOK_ALLOW_PRIVATE": "1",
        "WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
    }


def mail_addresses(http_port: int, smtp_port: int) -> dict[str, str]:
    """Where the Procfile's mail catcher listens (SMTP and its HTTP API), and users-service's
    way to it."""
    return {
        "MAIL_CATCHER_HTTP_PORT": str(http_port),
        "MAIL_CATCHER_SMTP_PORT": str(smtp_port),
        "SMTP_URL": f"smtp://127.0.0.1:{smtp_port}",
    }
