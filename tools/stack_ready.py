"""`make run`'s one "ready" line: printed once every process of the stack answers ``/ready``.

The gateway is ready before the services behind it (it only needs its own parts), so its
``/ready`` alone does not mean a request will get through. This waits for each process's
own ``/ready`` (the gateway's on its admin port), ports read from the environment as the
services read them, then prints where to go, and stays until honcho stops the stack (a
Procfile process that exits would stop all the others).
"""

from __future__ import annotations

import os
import signal
import sys
import time
import urllib.error
import urllib.request

# Procfile name → (the port variable, its default), as each service's settings read them.
READINESS = {
    "gateway": ("GATEWAY_ADMIN_PORT", 9000),
    "users": ("USERS_PORT", 8001),
    "orders": ("ORDERS_PORT", 8002),
    "books": ("BOOKS_PORT", 4000),
    "webhooks": ("WEBHOOKS_PORT", 8003),
    "dispatcher": ("WEBHOOKS_DISPATCHER_PORT", 8004),
    "mail": ("MAIL_CATCHER_HTTP_PORT", 8025),
}
POLL_S = 0.25
REMIND_AFTER_S = 60.0


def _port(name: str) -> int:
    variable, default = READINESS[name]
    return int(os.environ.get(variable, default))


def is_ready(port: int) -> bool:
    """Whether ``/ready`` on ``port`` answers 200 now."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=1) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def wait_until_ready(names: list[str]) -> None:
    """Block until every process in ``names`` is ready; name the late ones now and then."""
    waiting = list(names)
    started = reminded = time.monotonic()
    while waiting:
        waiting = [name for name in waiting if not is_ready(_port(name))]
        if waiting and time.monotonic() - reminded > REMIND_AFTER_S:
            reminded = time.monotonic()
            late = ", ".join(waiting)
            print(f"still waiting for: {late} ({reminded - started:.0f} s; see their lines above)")
        if waiting:
            time.sleep(POLL_S)


def main() -> None:
    wait_until_ready(list(READINESS))
    gateway = os.environ.get("GATEWAY_PORT", "8000")
    print(
        f"ready: every service answers — the API is at http://localhost:{gateway} "
        f"(docs http://localhost:{gateway}/docs)",
        flush=True,
    )
    signal.pause()  # honcho stops the stack, this with it


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # a TextIOWrapper
    main()
