"""What a release is in this repository, read from git: one module for every tool that asks.

A service's version is the ``version`` in its ``<service>/pyproject.toml`` (MAJOR.MINOR.PATCH);
a release is a tag ``<service>-v<version>`` (docs/releasing.md). The contract gate
(tools/contracts/baseline.py), the previous release a mixed-version run deploys
(tools/previous_release.py) and the release tool (tools/release.py) all read them here.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

SERVICES = ("gateway", "users-service", "orders-service", "books-graphql", "webhooks-service")
SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")

Version = tuple[int, int, int]


def parse(version: str) -> Version:
    """``"1.4.0"`` → ``(1, 4, 0)``; anything but MAJOR.MINOR.PATCH is refused."""
    match = SEMVER.match(version)
    if match is None:
        raise ValueError(f"not a semantic version MAJOR.MINOR.PATCH: {version!r}")
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def tag_of(service: str, version: str) -> str:
    """The name of the tag that releases ``service`` at ``version``."""
    return f"{service}-v{version}"


def git(root: Path, *args: str) -> str | None:
    """A git command's output in ``root``, or None when git fails (no such commit, path...)."""
    run = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False)
    return run.stdout if run.returncode == 0 else None


def version_at(root: Path, service: str, ref: str | None = None) -> str | None:
    """The service's version in the working tree (``ref`` None) or at ``ref``; None if absent."""
    path = f"{service}/pyproject.toml"
    if ref is None:
        file = root / path
        text = file.read_text(encoding="utf-8") if file.exists() else None
    else:
        text = git(root, "show", f"{ref}:{path}")
    if text is None:
        return None
    version = tomllib.loads(text).get("project", {}).get("version")
    return str(version) if version is not None else None


def release_tags(root: Path, service: str) -> list[tuple[str, str]]:
    """The service's release tags as (version, tag), oldest version first."""
    prefix = tag_of(service, "")
    found = []
    for tag in (git(root, "tag", "--list", f"{prefix}*") or "").split():
        version = tag.removeprefix(prefix)
        if SEMVER.match(version):
            found.append((version, tag))
    return sorted(found, key=lambda pair: parse(pair[0]))
