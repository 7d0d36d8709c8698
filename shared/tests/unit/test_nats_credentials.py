"""NATS credentials: the seeds, where each process finds its own, and the server's config."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from api_devservers.nats_server import nats_server_binary
from api_shared.events.access import DEVELOPMENT, INSPECTOR, SERVICES, server_config
from api_shared.events.credentials import (
    CredentialsError,
    ensure_seeds,
    new_seed,
    public_key,
    read_seed,
)
from api_shared.events.settings import EventSettings
from api_shared.settings import ConfigurationError


def test_a_seed_is_an_nkey_user_seed_whose_public_key_names_a_user() -> None:
    seed = new_seed()

    assert seed.startswith(b"SU")
    assert len(seed) == 58
    assert public_key(seed).startswith("U")
    assert len(public_key(seed)) == 56
    assert public_key(seed) != public_key(new_seed())


@pytest.mark.parametrize("content", [b"", b"not a seed", b"SUNOTBASE32!", new_seed()[:-3]])
def test_a_file_that_holds_no_seed_is_refused_by_its_name_alone(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "broken.nk"
    path.write_bytes(content)

    with pytest.raises(CredentialsError) as refused:
        read_seed(path)

    assert str(path) in str(refused.value)
    assert content.decode() not in str(refused.value) or not content


def test_a_missing_seed_file_is_refused_by_its_name(tmp_path: Path) -> None:
    with pytest.raises(CredentialsError, match=r"cannot read the NKey seed .*missing\.nk"):
        read_seed(tmp_path / "missing.nk")


def test_seeds_are_made_once_readable_by_their_owner_only_and_then_kept(tmp_path: Path) -> None:
    folder = tmp_path / "keys"

    first = ensure_seeds(folder, ["users-service", "orders-service"])
    seed = (folder / "users-service.nk").read_bytes()
    again = ensure_seeds(folder, ["users-service", "orders-service", "inspector"])

    assert (folder / "users-service.nk").read_bytes() == seed
    assert again["users-service"] == first["users-service"] == public_key(seed)
    assert set(again) == {"users-service", "orders-service", "inspector"}
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "inspector.nk").stat().st_mode) == 0o600
    assert sorted(p.name for p in folder.iterdir()) == [
        "inspector.nk",
        "orders-service.nk",
        "users-service.nk",
    ]


def test_in_development_a_process_finds_its_seed_where_the_embedded_server_wrote_it() -> None:
    settings = EventSettings(environment="development", nats_keys_dir=Path("var/keys"))

    login = settings.nats_login("orders-service")

    assert (login.url, login.user) == ("nats://127.0.0.1:4223", "orders-service")
    assert login.seed_file == Path("var/keys/orders-service.nk")


def test_a_configured_seed_file_is_used_in_any_environment() -> None:
    for environment in ("development", "production"):
        settings = EventSettings(
            environment=environment,
            nats_url="nats://nats:4222",
            nats_nkey_seed_file=Path("/run/secrets/nats_orders_service_seed"),
        )

        login = settings.nats_login("orders-service")

        assert login.url == "nats://nats:4222"
        assert login.seed_file == Path("/run/secrets/nats_orders_service_seed")


def test_production_without_a_seed_file_is_refused_in_one_line_naming_the_setting() -> None:
    settings = EventSettings(environment="production", nats_url="nats://nats:4222")

    with pytest.raises(ConfigurationError) as refused:
        settings.nats_login("webhooks-dispatcher")

    message = str(refused.value)
    assert message.startswith("NATS_NKEY_SEED_FILE must name the NKey seed")
    assert "webhooks-dispatcher" in message
    assert "\n" not in message


def test_the_deployments_know_the_services_alone_and_development_the_inspector_too() -> None:
    assert {user.name for user in SERVICES} == {
        "users-service",
        "orders-service",
        "webhooks-dispatcher",
    }
    assert set(DEVELOPMENT) == {*SERVICES, INSPECTOR}


def test_nats_server_accepts_the_rendered_config(tmp_path: Path) -> None:
    config = tmp_path / "nats.conf"
    config.write_text(server_config(DEVELOPMENT, monitoring="127.0.0.1:8222"))
    keys = ensure_seeds(tmp_path / "keys", [user.name for user in DEVELOPMENT])
    variables = {user.nkey_variable: keys[user.name] for user in DEVELOPMENT}

    checked = subprocess.run(
        [nats_server_binary(), "-t", "-c", str(config)],
        env=variables,
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    missing = subprocess.run(
        [nats_server_binary(), "-t", "-c", str(config)],
        env={},
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )

    assert checked.returncode == 0, checked.stderr
    # A user's public key not given: the server does not start (no user without a key).
    assert missing.returncode != 0
    assert "NATS_USERS_SERVICE_NKEY" in missing.stderr + missing.stdout
