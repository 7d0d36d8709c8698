"""A server as a real process of its own: started, stopped, paused, resumed, its log kept.

Each runs in its own process group, so that stopping it reaches every child (a shell line's
``python``, nginx's workers) and nothing else.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .paths import REPO
from .readiness import READY_TIMEOUT_S, until_ready, wait_ready

STOP_TIMEOUT_S = 10.0
LOG_TAIL_LINES = 40


def shell(line: str) -> list[str]:
    """The command that runs a Procfile ``line`` the way honcho does: under /bin/sh."""
    return ["/bin/sh", "-c", line]


@dataclass
class Service:
    """One server process group; ``external_url`` for a server this code did not start."""

    name: str
    command: Sequence[str]
    env: Mapping[str, str]
    log_path: Path
    port: int = 0
    admin_port: int | None = None  # the gateway's: /ready and /metrics are served there
    external_url: str | None = None
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return self.external_url or f"http://127.0.0.1:{self.port}"

    @property
    def admin_url(self) -> str:
        """Where /health, /ready and /metrics are: the admin port, if it has one."""
        return f"http://127.0.0.1:{self.admin_port or self.port}"

    @property
    def pid(self) -> int | None:
        """The process group's leader (the server itself when its shell line ``exec``s it)."""
        return self.process.pid if self.process is not None else None

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                list(self.command),
                cwd=REPO,
                env=dict(self.env),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() reaches its children
            )

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int | None:
        """Stop the process group; SIGKILL whatever outlives the grace period."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else None
        os.killpg(self.process.pid, sig)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGCONT)  # a paused group handles no signal
        try:
            return self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            return self.process.wait(STOP_TIMEOUT_S)

    def pause(self) -> None:
        """Freeze the process group (SIGSTOP): connections stay open, nothing is answered."""
        if self.process is not None and self.is_running():
            os.killpg(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused process group run again (SIGCONT)."""
        if self.process is not None and self.is_running():
            os.killpg(self.process.pid, signal.SIGCONT)

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def exited(self) -> str | None:
        """None while it runs (or was never started here); else its exit code and log."""
        if self.process is None or self.process.poll() is None:
            return None
        return f"{self.name} exited ({self.process.returncode}):\n{self.log_tail()}"

    def wait_ready(self, path: str = "/ready", timeout_s: float = READY_TIMEOUT_S) -> float:
        """Block until ``path`` on its admin port answers 200 (see ``readiness``)."""
        return wait_ready(f"{self.admin_url}{path}", self.exited, timeout_s=timeout_s)

    async def until_ready(self, path: str = "/ready", timeout_s: float = READY_TIMEOUT_S) -> float:
        """``wait_ready`` without blocking the event loop."""
        return await until_ready(f"{self.admin_url}{path}", self.exited, timeout_s=timeout_s)
