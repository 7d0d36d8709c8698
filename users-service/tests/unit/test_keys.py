"""Signing keys: RFC 7638 key ids, the published JWKS, reading and creating key files."""

from __future__ import annotations

import base64
import stat
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from api_shared.auth import public_keys_from_jwks
from users_service.sessions.keys import SigningKeyError, SigningKeys, key_id, load_signing_keys
from users_service.settings import DEV_SIGNING_KEY_FILE, Settings

# RFC 8037 appendix A.1 (the Ed25519 key) and A.3 (its RFC 7638 thumbprint).
RFC_8037_X = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
RFC_8037_THUMBPRINT = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"


def private_pem(key: Ed25519PrivateKey | ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def public_pem(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def settings_with(**values: Any) -> Settings:
    return Settings(environment="development", **values)


def test_the_key_id_is_the_rfc_7638_thumbprint() -> None:
    raw = base64.urlsafe_b64decode(RFC_8037_X + "=")

    assert key_id(Ed25519PublicKey.from_public_bytes(raw)) == RFC_8037_THUMBPRINT


def test_the_jwks_lists_the_current_key_first_then_the_retired_ones_without_secrets() -> None:
    current, retired = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()

    keys = SigningKeys.of(current, (retired.public_key(),))
    jwks = keys.jwks()

    assert [entry["kid"] for entry in jwks["keys"]] == [
        key_id(current.public_key()),
        key_id(retired.public_key()),
    ]
    assert keys.kid == jwks["keys"][0]["kid"]
    assert all("d" not in entry for entry in jwks["keys"])
    assert set(public_keys_from_jwks(jwks)) == set(keys.public_keys)


def test_configured_key_files_are_read(tmp_path: Path) -> None:
    current, retired = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    (tmp_path / "current.pem").write_bytes(private_pem(current))
    (tmp_path / "retired.pem").write_bytes(public_pem(retired.public_key()))

    keys = load_signing_keys(
        settings_with(
            jwt_private_key_file=tmp_path / "current.pem",
            jwt_public_key_files=(tmp_path / "retired.pem",),
        )
    )

    assert keys.kid == key_id(current.public_key())
    assert set(keys.public_keys) == {key_id(current.public_key()), key_id(retired.public_key())}


def test_in_development_a_key_is_created_under_var_once_and_then_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    first = load_signing_keys(settings_with())
    second = load_signing_keys(settings_with())

    key_file = tmp_path / DEV_SIGNING_KEY_FILE
    assert first.kid == second.kid
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("content", "field"),
    [
        (None, "jwt_private_key_file"),
        (b"not a pem", "jwt_private_key_file"),
        (private_pem(ec.generate_private_key(ec.SECP256R1())), "jwt_private_key_file"),
        (None, "jwt_public_key_files"),
        (private_pem(Ed25519PrivateKey.generate()), "jwt_public_key_files"),
    ],
    ids=["missing", "garbage", "not-ed25519", "missing-public", "private-as-public"],
)
def test_an_unusable_key_file_stops_the_start_with_its_path(
    tmp_path: Path, content: bytes | None, field: str
) -> None:
    good = tmp_path / "good.pem"
    good.write_bytes(private_pem(Ed25519PrivateKey.generate()))
    bad = tmp_path / "bad.pem"
    if content is not None:
        bad.write_bytes(content)
    values: dict[str, object] = {"jwt_private_key_file": good, field: bad}
    if field == "jwt_public_key_files":
        values[field] = (bad,)

    with pytest.raises(SigningKeyError, match=str(bad)):
        load_signing_keys(settings_with(**values))
