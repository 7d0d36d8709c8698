"""Endpoint secrets at rest: sealed under the key file's first key, opened by any of its keys."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from api_testkit.fixtures import environment_without
from webhooks_service.models import Endpoint
from webhooks_service.secret_box import (
    SealedSecretError,
    SecretBox,
    SecretKeyError,
    load_secret_box,
    new_key,
    read_keys,
    signing_secrets,
)
from webhooks_service.settings import Settings
from webhooks_service.signing import new_secret

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

clean_environment = environment_without("APP_ENV", "WEBHOOK_SECRETS_KEY_FILE")


def test_a_sealed_secret_does_not_contain_the_secret_and_opens_to_it() -> None:
    box, secret = SecretBox([new_key()]), new_secret()
    sealed = box.seal(secret)
    assert secret not in sealed
    assert secret.removeprefix("whsec_") not in sealed
    assert box.open(sealed) == secret


def test_another_key_cannot_open_a_sealed_secret() -> None:
    sealed = SecretBox([new_key()]).seal(new_secret())
    with pytest.raises(SealedSecretError):
        SecretBox([new_key()]).open(sealed)


def test_a_rotated_key_file_opens_old_secrets_and_reseals_them_with_the_new_key() -> None:
    old, new = new_key(), new_key()
    secret = new_secret()
    sealed_before = SecretBox([old]).seal(secret)
    rotated = SecretBox([new, old])
    assert rotated.open(sealed_before) == secret
    resealed = rotated.reseal(sealed_before)
    assert resealed is not None
    assert SecretBox([new]).open(resealed) == secret  # the old key may go now
    assert rotated.reseal(resealed) is None  # already under the first key


def test_a_plaintext_secret_of_before_sealing_is_opened_as_it_is_and_resealed() -> None:
    box, secret = SecretBox([new_key()]), new_secret()
    assert box.open(secret) == secret
    resealed = box.reseal(secret)
    assert resealed is not None
    assert resealed != secret
    assert box.open(resealed) == secret


def test_the_key_file_holds_keys_one_per_line_the_sealing_one_first(tmp_path: Path) -> None:
    first, second = new_key(), new_key()
    path = tmp_path / "keys"
    path.write_bytes(b"# rotated 2026-01-02\n" + first + b"\n\n" + second + b"\n")
    assert read_keys(path) == [first, second]


@pytest.mark.parametrize(
    ("content", "problem"),
    [(b"", "holds no key"), (b"# nothing\n", "holds no key"), (b"not-a-key\n", "line 1")],
)
def test_a_key_file_without_a_valid_key_is_refused(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    path = tmp_path / "keys"
    path.write_bytes(content)
    with pytest.raises(SecretKeyError, match=problem):
        read_keys(path)


def test_a_missing_key_file_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(SecretKeyError, match="missing-file"):
        read_keys(tmp_path / "missing-file")


def _endpoint(box: SecretBox, secret: str, previous: str | None, until: datetime | None):
    return Endpoint(
        secret=box.seal(secret),
        previous_secret=box.seal(previous) if previous else None,
        previous_secret_until=until,
    )


def test_the_replaced_secret_signs_beside_the_new_one_until_its_grace_period_ends() -> None:
    box, new, old = SecretBox([new_key()]), new_secret(), new_secret()
    endpoint = _endpoint(box, new, old, NOW + timedelta(hours=1))
    assert signing_secrets(endpoint, box, NOW) == [new, old]
    assert signing_secrets(endpoint, box, NOW + timedelta(hours=1)) == [new]
    assert signing_secrets(_endpoint(box, new, None, None), box, NOW) == [new]


def test_development_creates_its_key_once_readable_by_its_user_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "var" / "webhook-secrets.key"
    monkeypatch.setattr("webhooks_service.secret_box.DEV_SECRETS_KEY_FILE", path)
    sealed = load_secret_box(Settings()).seal("whsec_x")
    assert path.stat().st_mode & 0o777 == 0o600
    assert len(read_keys(path)) == 1
    # The next process (the dispatcher beside the API) finds the same key.
    assert load_secret_box(Settings()).open(sealed) == "whsec_x"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
