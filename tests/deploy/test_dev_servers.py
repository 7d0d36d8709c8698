"""The development servers (``devservers``: the mail catcher, the nats-server runner) stay out
of every service: no runtime member's locked dependencies reach them or the SMTP server only
the catcher needs (aiosmtpd), read from uv.lock; the images are checked in tests/compose."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEV_SERVERS = "devservers"
SMTP_SERVER = "aiosmtpd"
# What a service's image installs (``uv sync --no-dev --package <member>``), and the frame.
RUNTIME_MEMBERS = (
    "api-shared",
    "gateway",
    "users-service",
    "orders-service",
    "books-graphql",
    "webhooks-service",
)


def locked_closure(package: str) -> set[str]:
    """Every package ``uv sync --no-dev --package <package>`` installs, from uv.lock: its
    dependencies and those of the extras asked for, never a dependency group."""
    locked = {p["name"]: p for p in tomllib.loads((ROOT / "uv.lock").read_text())["package"]}
    seen: set[tuple[str, tuple[str, ...]]] = set()
    wanted: list[tuple[str, tuple[str, ...]]] = [(package, ())]
    while wanted:
        name, extras = wanted.pop()
        seen.add((name, extras))
        entry = locked[name]
        requirements = list(entry.get("dependencies", []))
        for extra in extras:
            requirements += entry.get("optional-dependencies", {}).get(extra, [])
        for requirement in requirements:
            needed = (requirement["name"], tuple(requirement.get("extra", ())))
            if needed not in seen:
                wanted.append(needed)
    return {name for name, _ in seen}


def test_no_runtime_member_reaches_the_development_servers_or_their_smtp_server() -> None:
    # The walk finds what is there: the development servers do need the SMTP server.
    assert {SMTP_SERVER, "api-shared", "aiohttp"} <= locked_closure(DEV_SERVERS)
    for member in RUNTIME_MEMBERS:
        closure = locked_closure(member)
        assert {"sanic", "pydantic"} <= closure, f"{member}: the walk reads uv.lock"
        assert SMTP_SERVER not in closure, f"{member} would install {SMTP_SERVER}"
        assert DEV_SERVERS not in closure, f"{member} would install the development servers"


def test_the_development_servers_are_a_development_dependency_only() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert DEV_SERVERS in project["dependency-groups"]["dev"]
    assert DEV_SERVERS not in project["project"]["dependencies"]
    shared = tomllib.loads((ROOT / "shared" / "pyproject.toml").read_text())["project"]
    assert not [d for d in shared["dependencies"] if d.startswith(SMTP_SERVER)]
