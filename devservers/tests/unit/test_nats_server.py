"""The nats-server runner's plain parts: the config it writes beside its users' seeds and the
command it runs (no server started here: the suites that use ``NatsServer`` start real ones)."""

from __future__ import annotations

from pathlib import Path

from api_devservers.nats_server import listening, prepare, server_command
from api_shared.events.access import DEVELOPMENT
from api_shared.events.credentials import public_key, read_seed, seed_file
from api_testkit.ports import free_port


def test_prepare_writes_each_users_seed_once_and_their_public_keys_atop_the_config(
    tmp_path: Path,
) -> None:
    config = prepare(tmp_path)
    seeds = {user.name: read_seed(seed_file(tmp_path, user.name)) for user in DEVELOPMENT}
    again = prepare(tmp_path)

    assert again == config == tmp_path / "nats-server.conf"
    text = config.read_text()
    for user in DEVELOPMENT:
        expected = public_key(seeds[user.name].encode())
        assert f'{user.nkey_variable}: "{expected}"\n' in text
        assert read_seed(seed_file(tmp_path, user.name)) == seeds[user.name], "seeds are kept"


def test_the_server_runs_with_jetstream_its_config_and_store_on_the_loopback(
    tmp_path: Path,
) -> None:
    command = server_command(4223, tmp_path / "store", tmp_path / "nats-server.conf")

    assert Path(command[0]).name == "nats-server"
    assert command[1:] == [
        "--config",
        str(tmp_path / "nats-server.conf"),
        "--jetstream",
        "--addr",
        "127.0.0.1",
        "--port",
        "4223",
        "--store_dir",
        str(tmp_path / "store"),
    ]


def test_nothing_listens_on_a_free_port() -> None:
    assert not listening(free_port())
